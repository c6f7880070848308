// One BrokerClient per broker address for a test file (channels from the one client cache),
// closed together in afterAll.
import { GrpcClientCache } from "../../../libs/server/grpc-client-cache.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";

export class BrokerClients {
  private clients = new GrpcClientCache();

  get(address: string): BrokerClient {
    return new BrokerClient(address, this.clients);
  }

  /** Closes every channel; later get() calls open new ones. */
  closeAll(): void {
    this.clients.close();
    this.clients = new GrpcClientCache();
  }
}
