// Authentication (client certificates, username/password) and ACL authorization of the gRPC API. See docs/security.md.
export {
  grpcAuthorizerInterceptor,
  authorize,
  type GrpcAuthorizerOptions,
} from "./grpc-authorizer.js";
export {
  GRPC_ACL_RULES,
  DEFAULT_RULE,
  isOpenMethod,
  ruleOf,
  type GrpcAclRule,
  type RuleContext,
} from "./grpc-acl-rules.js";
export {
  AUTHORIZATION_HEADER,
  basicAuthorizationValue,
  parseBasicAuthorization,
  PasswordVerifier,
  VERIFIED_CACHE_ENTRIES_MAX,
} from "./password-verifier.js";
export { metadataSecurityView, type SecurityView } from "./security-view.js";
