// One BrokerClient per broker address for a test file (channels from the one client cache),
// closed together in afterAll.
import { GrpcClientCache } from "../../../libs/grpc/grpc-client-cache.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";
import { processCredentials } from "../../../libs/server/tls/credentials.js";

export class BrokerClients {
  private clients = new GrpcClientCache({ credentials: processCredentials() });

  get(address: string): BrokerClient {
    return new BrokerClient(address, this.clients);
  }

  /** Closes every channel; later get() calls open new ones. */
  closeAll(): void {
    this.clients.close();
    this.clients = new GrpcClientCache({ credentials: processCredentials() });
  }
}
