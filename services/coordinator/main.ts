// The coordinator process: everything but the role's composition lives in libs/server.
import { runService } from "../../libs/server/run-service.js";
import { compose } from "./compose.js";

await runService({ role: "coordinator", argv: process.argv.slice(2), compose });
