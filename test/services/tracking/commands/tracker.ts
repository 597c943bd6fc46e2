import assert from 'node:assert/strict';
import net from 'node:net';
import { protocolEntry } from '../../../../src/services/tracking/protocols/registry.ts';
import type { DeviceProtocol } from '../../../../src/services/tracking/protocols/registry.ts';
import type { DeviceFix, SimulatedTracker, TrackerCommands } from '../../../../src/services/tracking/protocols/simulated-tracker.ts';

export const FIX: DeviceFix = { time: new Date(Date.UTC(2025, 2, 1)), latitude: 52.5, longitude: 13.4, altitude: 30, speed: 10, course: 90, valid: true };

const WAIT_MS = 5000;

/** A tracker on a real TCP connection that keeps the server's commands apart from its acknowledgements. */
export class Tracker {
  readonly protocol: DeviceProtocol;
  readonly uniqueId: string;
  readonly #socket: net.Socket;
  #buffer = Buffer.alloc(0);
  /** Answers still due to the login frames: the server frames its answers to them apart from the rest. */
  #loginAnswers = 0;
  readonly #commands: Buffer[] = [];
  readonly #acks: Buffer[] = [];
  #wake: (() => void) | undefined;
  #serial = 1;
  readonly #simulated: SimulatedTracker;
  readonly #commandFrames: TrackerCommands;

  private constructor(protocol: DeviceProtocol, simulated: SimulatedTracker, uniqueId: string, socket: net.Socket) {
    this.protocol = protocol;
    this.#simulated = simulated;
    assert.ok(simulated.commands, `${protocol}: the simulated tracker takes commands`);
    this.#commandFrames = simulated.commands;
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

  /** Connects and logs in (where a tracker has no login, it names itself in a first report); resolves once the server accepted it. */
  static async connect(protocol: DeviceProtocol, port: number, uniqueId: string): Promise<Tracker> {
    const simulated = await protocolEntry(protocol)!.simulator();
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const tracker = new Tracker(protocol, simulated, uniqueId, socket);
    const login = simulated.login(uniqueId, tracker.#serial);
    tracker.#serial += login.length;
    tracker.#loginAnswers = login.length;
    for (const frame of login) {
      socket.write(frame);
      const answer = await tracker.nextAck();
      assert.notEqual(simulated.accepted?.(answer), false, 'login accepted');
    }
    if (login.length === 0) await tracker.report();
    return tracker;
  }

  #split(): void {
    for (;;) {
      const length = this.#simulated.serverFrameLength!(this.#buffer, this.#loginAnswers === 0);
      if (length === undefined || this.#buffer.length < length) return;
      const frame = this.#buffer.subarray(0, length);
      this.#buffer = this.#buffer.subarray(length);
      if (this.#commandFrames.isCommand(frame)) {
        this.#commands.push(frame);
      } else {
        this.#acks.push(frame);
        if (this.#loginAnswers > 0) this.#loginAnswers--;
      }
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
    this.#socket.write(this.#commandFrames.answer(this.uniqueId, command, FIX, this.#serial++));
  }

  /** Writes bytes as they are, such as an answer recorded from a real device. */
  write(bytes: Buffer): void {
    this.#socket.write(bytes);
  }

  /** Reports a position and waits for its acknowledgement. */
  async report(fix: DeviceFix = FIX): Promise<void> {
    const frame = this.#simulated.report(this.uniqueId, fix, this.#serial++);
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
