// Start the Firestore emulator on 127.0.0.1 only (the package's own start() binds every interface).
// Usage: node serve.js [port]; port 0 (the default) lets the system pick one. Prints "listening <port>" when ready.
"use strict";
const { ServerCredentials } = require("@grpc/grpc-js");
const { FirestoreServer } = require("@firestore-emulator/server");

const emulator = new FirestoreServer();
const port = Number(process.argv[2] || 0);
emulator.server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  console.log(`listening ${bound}`);
});
const stop = () => {
  emulator.stop();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
