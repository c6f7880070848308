// Kafka's record batch checksum lives with the record format (libs/records/crc32c.ts).
export { crc32c } from "../../libs/records/crc32c.js";
