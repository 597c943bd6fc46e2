import { ConfigError } from '../config.ts';

/** The settings a listener was opened with: the variables naming its port and address, and their values. */
export interface ListenerSettings {
  portVariable: string;
  port: number;
  hostVariable: string;
  host: string;
  /** Said in the message where one variable opens listeners of both kinds (a device port over TCP and UDP). */
  transport?: 'TCP' | 'UDP';
}

/**
 * Runs `listen` and turns the failures an operator causes (a port another process holds, a port
 * this user may not open, an address not of this machine) into a ConfigError naming the variable,
 * which `npm start` prints as one line, as it does a bad value. Anything else is rethrown.
 */
export async function listenAsConfigured<T>(settings: ListenerSettings, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    throw configErrorOf(error, settings) ?? error;
  }
}

function configErrorOf(error: unknown, { portVariable, port, hostVariable, host, transport }: ListenerSettings): ConfigError | undefined {
  const portName = `${transport ? `${transport} ` : ''}port ${port}`;
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case 'EADDRINUSE':
      return new ConfigError(portVariable, `${portName} is already in use`);
    case 'EACCES':
      return new ConfigError(portVariable, `${portName} may not be opened by this user (below 1024 it takes privileges)`);
    case 'EADDRNOTAVAIL':
      return new ConfigError(hostVariable, `${host} is not an address of this machine`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ConfigError(hostVariable, `the name ${host} does not resolve to an address`);
    default:
      return undefined;
  }
}
