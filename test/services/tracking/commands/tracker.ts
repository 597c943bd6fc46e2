import assert from 'node:assert/strict';
import net from 'node:net';
import type { CommandProtocol } from '../../../../src/cli/simulator/device-commands.ts';
import { deviceAnswer, isServerCommand, serverFrameLength } from '../../../../src/cli/simulator/device-commands.ts';
import {
  gps103Heartbeat,
  gps103Location,
  gps103Login,
  gt06Location,
  gt06Login,
  h02Location,
  jt808Auth,
  jt808Location,
  jt808Register,
  teltonikaAvlPacket,
  teltonikaHandshake,
} from '../../../../src/cli/simulator/encoders.ts';
import type { DeviceFix } from '../../../../src/cli/simulator/encoders.ts';

export const FIX: DeviceFix = { time: new Date(Date.UTC(2025, 2, 1)), latitude: 52.5, longitude: 13.4, altitude: 30, speed: 10, course: 90, valid: true };

const WAIT_MS = 5000;

/** A tracker on a real TCP connection that keeps the server's commands apart from its acknowledgements. */
export class Tracker {
  readonly protocol: CommandProtocol;
  readonly uniqueId: string;
  readonly #socket: net.Socket;
  #buffer = Buffer.alloc(0);
  #loggedIn = false;
  readonly #commands: Buffer[] = [];
  readonly #acks: Buffer[] = [];
  #wake: (() => void) | undefined;
  #serial = 1;

  private constructor(protocol: CommandProtocol, uniqueId: string, socket: net.Socket) {
    this.protocol = protocol;
    this.uniqueId = uniqueId;
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#split();
      this.#wake?.();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.#wake?.());
  }

  /** Connects and logs in (H02 names itself in a first location, JT808 registers then authenticates); resolves once the server accepted it. */
  static async connect(protocol: CommandProtocol, port: number, uniqueId: string): Promise<Tracker> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const tracker = new Tracker(protocol, uniqueId, socket);
    if (protocol === 'teltonika') {
      socket.write(teltonikaHandshake(uniqueId));
      await tracker.#until(() => tracker.#buffer.length >= 1, 'the login reply');
      assert.equal(tracker.#buffer[0], 1, 'login accepted');
      tracker.#buffer = tracker.#buffer.subarray(1);
      tracker.#loggedIn = true;
      tracker.#split();
    } else if (protocol === 'jt808') {
      tracker.#loggedIn = true;
      socket.write(jt808Register(uniqueId, tracker.#serial++));
      await tracker.nextAck();
      socket.write(jt808Auth(uniqueId, uniqueId, tracker.#serial++));
      await tracker.nextAck();
    } else {
      tracker.#loggedIn = true;
      socket.write(protocol === 'gt06' ? gt06Login(uniqueId, tracker.#serial++) : protocol === 'gps103' ? gps103Login(uniqueId) : h02Location(uniqueId, FIX));
      await tracker.nextAck();
    }
    return tracker;
  }

  #split(): void {
    if (!this.#loggedIn) return;
    for (;;) {
      const length = serverFrameLength(this.protocol, this.#buffer);
      if (length === undefined || this.#buffer.length < length) return;
      const frame = this.#buffer.subarray(0, length);
      this.#buffer = this.#buffer.subarray(length);
      (isServerCommand(this.protocol, frame) ? this.#commands : this.#acks).push(frame);
    }
  }

  async #until(ready: () => boolean, what: string, timeoutMs = WAIT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      const left = deadline - Date.now();
      if (left <= 0 || this.#socket.destroyed) assert.fail(`${this.protocol} tracker: no ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  async nextAck(): Promise<Buffer> {
    await this.#until(() => this.#acks.length > 0, 'acknowledgement');
    return this.#acks.shift() as Buffer;
  }

  async nextCommand(timeoutMs = WAIT_MS): Promise<Buffer> {
    await this.#until(() => this.#commands.length > 0, 'command', timeoutMs);
    return this.#commands.shift() as Buffer;
  }

  /** Commands received and not taken yet. */
  get pendingCommands(): number {
    return this.#commands.length;
  }

  /** Answers a command as the real device does. */
  answer(command: Buffer): void {
    this.#socket.write(deviceAnswer(this.protocol, this.uniqueId, command, FIX, this.#serial++));
  }

  /** Writes bytes as they are, such as an answer recorded from a real device. */
  write(bytes: Buffer): void {
    this.#socket.write(bytes);
  }

  /** Reports a position and waits for its acknowledgement. */
  async report(fix: DeviceFix = FIX): Promise<void> {
    const frames = {
      gt06: () => gt06Location(fix, this.#serial++),
      teltonika: () => teltonikaAvlPacket([fix]),
      h02: () => h02Location(this.uniqueId, fix),
      jt808: () => jt808Location(this.uniqueId, fix, this.#serial++),
      // A report has no answer; the heartbeat after it is answered ON once the report is stored.
      gps103: () => Buffer.concat([gps103Location(this.uniqueId, fix), gps103Heartbeat(this.uniqueId)]),
    };
    const frame = frames[this.protocol]();
    this.#socket.write(frame);
    await this.nextAck();
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#socket.destroyed) return resolve();
      this.#socket.once('close', () => resolve());
      this.#socket.end();
    });
  }
}
