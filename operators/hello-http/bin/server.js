// The workload: answers every request with the greeting, and records the port it got.
const http = require("node:http");
const fs = require("node:fs");
const path = require("node:path");

const data = process.env.STEWARD_UNIT_DATA;
const greeting = process.env.GREETING || "Hello";
const unit = process.env.STEWARD_UNIT_NAME || "unknown unit";
const server = http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/plain" });
  res.end(`${greeting} (${unit})\n`);
});
server.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  fs.writeFileSync(path.join(data, "port"), String(server.address().port));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
