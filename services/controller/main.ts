// The controller process: everything but the role's composition lives in libs/server.
import { runService } from "../../libs/server/run-service.js";
import { compose } from "./compose.js";

await runService({ role: "controller", argv: process.argv.slice(2), compose });
