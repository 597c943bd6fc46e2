import type { Notification } from '../channels/notification.ts';
import { en } from './en.ts';

/** What a template may say of an event: text only, already formatted for the recipient. */
export interface MessageFields {
  device: string;
  type: string;
  /** The event's time in the recipient's timezone. */
  time: string;
  alarm?: string;
  geofence?: string;
  speed?: string;
  message?: string;
  driver?: string;
  result?: string;
}

export interface Template {
  title(fields: MessageFields): string;
  body(fields: MessageFields): string;
}

/** One language's messages: a template per event type, a fallback for types it lacks, and the repeat note. */
export interface MessageTemplates {
  types: Partial<Record<string, Template>>;
  fallback: Template;
  repeated(count: number): string;
}

/** Languages with templates, by their primary subtag; a new language is one file and one line here. */
const LANGUAGES: Record<string, MessageTemplates> = { en };

export interface RenderedMessage {
  title: string;
  body: string;
  /** The web app's page of the event. */
  url: string;
}

/** The message of a notification in the user's language (English when there is none) and timezone. */
export function renderMessage(notification: Notification, webUrl: string): RenderedMessage {
  const language = notification.user.language ?? 'en';
  const templates = LANGUAGES[language.toLowerCase().split(/[-_]/)[0] ?? 'en'] ?? en;
  const { event } = notification;
  const attributes = event.attributes;
  const text = (value: unknown) => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);
  const fields: MessageFields = {
    device: notification.device.name,
    type: event.type,
    time: formatTime(event.eventTime, language, notification.user.timezone),
    ...optional('alarm', text(attributes.alarm)),
    ...optional('geofence', event.geofence?.name),
    ...optional('speed', text(attributes.speed)),
    ...optional('message', text(attributes.message)),
    ...optional('driver', text(attributes.driverUniqueId)),
    ...optional('result', text(attributes.result)),
  };
  const template = templates.types[event.type] ?? templates.fallback;
  const repeated = notification.count > 1 ? ` (${templates.repeated(notification.count)})` : '';
  return {
    title: template.title(fields) + repeated,
    body: template.body(fields),
    url: `${webUrl}/devices/${notification.device.id}${event.id > 0 ? `?event=${event.id}` : ''}`,
  };
}

function optional<K extends keyof MessageFields>(key: K, value: string | undefined): Partial<MessageFields> {
  return value === undefined ? {} : { [key]: value };
}

/** Formatters by language and zone: building one costs a fifth of a millisecond, formatting with it microseconds. */
const formats = new Map<string, Intl.DateTimeFormat>();
/** Users name a few zones and languages each; the bound keeps odd values from growing the map. */
const FORMATS_KEPT = 500;

/** The time in the user's timezone and language; UTC when the zone is unknown to this runtime. */
function formatTime(iso: string | null, language: string, timezone: string | null): string {
  const at = iso === null ? new Date() : new Date(iso);
  return formatOf(language, timezone ?? 'UTC').format(at);
}

function formatOf(language: string, timeZone: string): Intl.DateTimeFormat {
  const key = `${language}|${timeZone}`;
  let format = formats.get(key);
  if (format) return format;
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'long' };
  try {
    format = new Intl.DateTimeFormat(language, { ...options, timeZone });
  } catch {
    format = new Intl.DateTimeFormat('en', { ...options, timeZone: 'UTC' });
  }
  if (formats.size >= FORMATS_KEPT) formats.clear();
  formats.set(key, format);
  return format;
}
