// Starts local-aws-sqs on 127.0.0.1 at the port given and says so on
// stdout; it stops when its stdin closes (the test ended).
const { createSqsServer } = require("local-aws-sqs");

const port = Number(process.argv[2]);
createSqsServer({ port, hostname: "127.0.0.1", emulateQueueCreationLifecycle: false }).then((server) => {
  console.log(`listening on 127.0.0.1:${port}`);
  process.stdin.resume();
  process.stdin.on("end", () => {
    server.close();
    process.exit(0);
  });
});
