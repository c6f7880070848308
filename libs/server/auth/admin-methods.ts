// The admin operations of the gRPC API: who exists, with which SCRAM keys, and who may do what.
// When any listener of the process requires authentication (ServiceConfig.authenticationRequired)
// these are never served to an anonymous caller, whatever --grpc-authorizer says, and a broker
// or coordinator forwarding one from its Kafka listener must name the Kafka client's principal
// (ON_BEHALF_OF_HEADER), which is what the ACLs are checked against: the broker's own
// certificate does not lend its identity to a Kafka client.

/** Full gRPC method paths of the admin operations. */
export const ADMIN_METHODS: ReadonlySet<string> = new Set([
  "/tern.v1.Controller/AlterUserScramCredentials",
  "/tern.v1.Controller/DescribeUserScramCredentials",
  "/tern.v1.Controller/CreateAcls",
  "/tern.v1.Controller/DeleteAcls",
  "/tern.v1.Controller/DescribeAcls",
]);

export { ON_BEHALF_OF_HEADER } from "../../grpc/call-headers.js";

/** Kafka's name for a connection that did not authenticate. */
export const ANONYMOUS_KAFKA_PRINCIPAL = "User:ANONYMOUS";
