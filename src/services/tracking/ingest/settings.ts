import { ConfigError } from '../../../config.ts';
import { DEFAULT_ENGINE_SETTINGS, DEVICE_SETTING_KEYS } from '../engine/index.ts';
import type { EngineSettings } from '../engine/index.ts';

const BOOLEAN_SETTINGS = new Set<keyof EngineSettings>(['overspeedPreferLowest', 'ignoreDuplicateAlarms', 'useIgnition']);
// The settings without a default (set, they turn their rule on) are all among those a device may override.
const KNOWN_SETTINGS = new Set<string>([...Object.keys(DEFAULT_ENGINE_SETTINGS), ...DEVICE_SETTING_KEYS]);

/**
 * The server-wide settings of the event rules: Traccar's defaults with EVENT_DEFAULTS applied.
 * An unknown name or a value of the wrong kind stops the server with a ConfigError.
 */
export function engineSettings(defaults: Record<string, number | boolean>): EngineSettings {
  const settings: EngineSettings = { ...DEFAULT_ENGINE_SETTINGS };
  for (const [name, value] of Object.entries(defaults)) {
    if (!KNOWN_SETTINGS.has(name)) throw new ConfigError('EVENT_DEFAULTS', `unknown setting '${name}' (see docs/events.md)`);
    const key = name as keyof EngineSettings;
    if (BOOLEAN_SETTINGS.has(key) !== (typeof value === 'boolean')) {
      throw new ConfigError('EVENT_DEFAULTS', `${name} must be ${BOOLEAN_SETTINGS.has(key) ? 'true or false' : 'a number'}`);
    }
    (settings as unknown as Record<string, number | boolean>)[key] = value;
  }
  return settings;
}
