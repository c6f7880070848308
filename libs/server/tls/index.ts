// TLS and peer authentication for every gRPC listener and channel. See docs/security.md.
export {
  channelCredentials,
  clientTlsEnabled,
  openTls,
  serverCredentials,
  useClientPassword,
  useClientTls,
  useClientTlsFiles,
  type PasswordCredentials,
  type TlsContext,
} from "./credentials.js";
export {
  CLIENT_TLS_ENV,
  loadTlsMaterial,
  parseTlsConfig,
  SERVICE_TLS_FLAGS,
  TlsConfigError,
  type TlsConfig,
  type TlsMaterial,
} from "../../common/tls-config.js";
export {
  ANONYMOUS,
  describePrincipal,
  principalOfCertificate,
  rolesOfCertificate,
  ROLE_URI_PREFIX,
  type Principal,
} from "./principal.js";
export {
  decidePeerCall,
  peerAuthorizationInterceptor,
  principalOfCall,
} from "./peer-authorization.js";
export { PEER_METHODS } from "./peer-methods.js";
