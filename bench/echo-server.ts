import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * The ingestion bench's floor: a bare TCP server that answers each Teltonika frame as soon as it has
 * all of it, with the bytes the protocol expects (0x01 to the IMEI, the record count to an AVL
 * packet), and does nothing else: no decoding, no checksum, no database. The simulated trackers
 * read those answers, so the same load generator drives it as drives Trackstack; a byte-for-byte echo
 * would answer the IMEI with its length bytes, which a tracker reads as a refusal. A process of its
 * own, as the server is, so that it gets a core of its own. Its parent learns the port over IPC;
 * it exits when the parent disconnects.
 */
const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  let buffer: Buffer = Buffer.alloc(0);
  let identified = false;
  socket.on('data', (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    for (;;) {
      if (!identified) {
        // 2-byte length, then the IMEI.
        if (buffer.length < 2 || buffer.length < 2 + buffer.readUInt16BE(0)) return;
        buffer = buffer.subarray(2 + buffer.readUInt16BE(0));
        identified = true;
        socket.write(Buffer.from([0x01]));
        continue;
      }
      // 4 zero bytes, a 4-byte data length, the data (codec, record count, ...), a 4-byte CRC.
      if (buffer.length < 10 || buffer.length < 12 + buffer.readUInt32BE(4)) return;
      const answer = Buffer.alloc(4);
      answer.writeUInt32BE(buffer[9] as number, 0);
      buffer = buffer.subarray(12 + buffer.readUInt32BE(4));
      socket.write(answer);
    }
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
