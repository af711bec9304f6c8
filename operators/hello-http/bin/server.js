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
// The unit's address (where the machine meets the controller's network): reachable by units on
// other machines, without opening the server on every interface of the host.
const host = process.env.HOST || "127.0.0.1";
server.listen(Number(process.env.PORT || 0), host, () => {
  const { port } = server.address();
  fs.writeFileSync(path.join(data, "url"), `http://${host.includes(":") ? `[${host}]` : host}:${port}/`);
  fs.writeFileSync(path.join(data, "host"), host);
  fs.writeFileSync(path.join(data, "port"), String(port));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
