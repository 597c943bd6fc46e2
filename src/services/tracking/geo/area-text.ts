import { AreaError } from './area.ts';
import type { Area, LatLon } from './area.ts';

export const MAX_AREA_TEXT_LENGTH = 100_000;
export const MAX_AREA_POINTS = 10_000;

const WHITESPACE = /\s*/y;
const REQUIRED_WHITESPACE = /\s+/y;
const KEYWORD = /[A-Za-z]+/y;
const NUMBER = /[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const WORD = /[+-]?[A-Za-z0-9_.]+/y;
// Long offending tokens are cut so one bad input cannot produce a huge error message.
const MAX_QUOTED_LENGTH = 20;

/** Reads area text left to right; every error names a 1-based character position. */
class AreaTextReader {
  readonly text: string;
  position = 0;
  pointCount = 0;

  constructor(text: string) {
    this.text = text;
  }

  errorAt(message: string, position = this.position): AreaError {
    return new AreaError(`${message} at character ${position + 1}`);
  }

  /** Error for the current position, naming what should have come and what is there instead. */
  expectedHere(what: string): AreaError {
    return new AreaError(`expected ${what} at character ${this.position + 1}, found ${this.describeFound()}`);
  }

  describeFound(): string {
    if (this.position >= this.text.length) return 'end of text';
    const token = this.match(WORD) ?? String.fromCodePoint(this.text.codePointAt(this.position) ?? 0);
    if (/^[\x20-\x7e]+$/.test(token)) return `'${quote(token)}'`;
    return JSON.stringify(quote(token));
  }

  match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.position;
    return pattern.exec(this.text)?.[0];
  }

  skipWhitespace(): void {
    this.position += this.match(WHITESPACE)?.length ?? 0;
  }

  expectChar(char: string): void {
    this.skipWhitespace();
    if (this.text[this.position] !== char) throw this.expectedHere(`'${char}'`);
    this.position++;
  }

  /** Consumes `char` if it comes next (after whitespace) and says whether it did. */
  acceptChar(char: string): boolean {
    this.skipWhitespace();
    if (this.text[this.position] !== char) return false;
    this.position++;
    return true;
  }

  readKeyword(): { word: string; position: number } {
    this.skipWhitespace();
    const position = this.position;
    const word = this.match(KEYWORD);
    if (word === undefined) throw this.expectedHere('area kind (CIRCLE, POLYGON or LINESTRING)');
    this.position += word.length;
    return { word, position };
  }

  readNumber(what: string): { value: number; raw: string; position: number } {
    this.skipWhitespace();
    const position = this.position;
    const raw = this.match(NUMBER);
    if (raw === undefined) throw this.expectedHere(what);
    const value = Number(raw);
    if (!Number.isFinite(value)) throw this.errorAt(`${what} '${quote(raw)}' is not a finite number`, position);
    this.position += raw.length;
    // -0 would not survive formatArea (String(-0) is "0"), so it is read as 0.
    return { value: value === 0 ? 0 : value, raw, position };
  }

  readPoint(): LatLon {
    this.pointCount++;
    this.skipWhitespace();
    if (this.pointCount > MAX_AREA_POINTS) throw this.errorAt(`too many points: the limit is ${MAX_AREA_POINTS}`);
    const lat = this.readNumber('latitude');
    if (lat.value < -90 || lat.value > 90) {
      throw this.errorAt(`latitude ${quote(lat.raw)} out of range [-90, 90]`, lat.position);
    }
    const gap = this.match(REQUIRED_WHITESPACE);
    if (gap === undefined) throw this.expectedHere('whitespace between latitude and longitude');
    this.position += gap.length;
    const lon = this.readNumber('longitude');
    if (lon.value < -180 || lon.value > 180) {
      throw this.errorAt(`longitude ${quote(lon.raw)} out of range [-180, 180]`, lon.position);
    }
    return { lat: lat.value, lon: lon.value };
  }

  readPointList(): LatLon[] {
    const points = [this.readPoint()];
    while (this.acceptChar(',')) points.push(this.readPoint());
    return points;
  }

  expectEnd(): void {
    this.skipWhitespace();
    if (this.position < this.text.length) {
      throw new AreaError(`unexpected text after the area at character ${this.position + 1}: ${this.describeFound()}`);
    }
  }
}

function quote(token: string): string {
  return token.length > MAX_QUOTED_LENGTH ? `${token.slice(0, MAX_QUOTED_LENGTH)}...` : token;
}

function formatPoint(point: LatLon): string {
  return `${String(point.lat)} ${String(point.lon)}`;
}

function readCircle(reader: AreaTextReader): Area {
  reader.expectChar('(');
  const center = reader.readPoint();
  reader.expectChar(',');
  const radius = reader.readNumber('radius');
  if (radius.value <= 0) throw reader.errorAt(`CIRCLE radius must be > 0, got ${quote(radius.raw)}`, radius.position);
  reader.expectChar(')');
  return { kind: 'circle', center, radius: radius.value };
}

function readPolygon(reader: AreaTextReader): Area {
  reader.expectChar('(');
  reader.expectChar('(');
  const points = reader.readPointList();
  reader.expectChar(')');
  reader.skipWhitespace();
  if (reader.text[reader.position] === ',') throw reader.errorAt('POLYGON holes (inner rings) are not supported');
  reader.expectChar(')');
  if (points.length < 4) {
    throw new AreaError(`POLYGON needs at least 4 points (a closed ring of 3 corners), got ${points.length}`);
  }
  const first = points[0] as LatLon;
  const last = points[points.length - 1] as LatLon;
  if (first.lat !== last.lat || first.lon !== last.lon) {
    throw new AreaError(
      `POLYGON is not closed: first point (${formatPoint(first)}) differs from last point (${formatPoint(last)})`,
    );
  }
  return { kind: 'polygon', points };
}

function readLineString(reader: AreaTextReader): Area {
  reader.expectChar('(');
  const points = reader.readPointList();
  reader.expectChar(')');
  if (points.length < 2) throw new AreaError(`LINESTRING needs at least 2 points, got ${points.length}`);
  return { kind: 'linestring', points };
}

/**
 * Parses `CIRCLE (lat lon, radius_m)`, `POLYGON ((lat lon, ..., lat lon))` or
 * `LINESTRING (lat lon, lat lon, ...)`. Keywords are case-insensitive and whitespace is free,
 * except that latitude and longitude must be separated by at least one whitespace character.
 * Throws AreaError, and nothing else, for any invalid input.
 */
export function parseArea(text: string): Area {
  if (typeof text !== 'string') throw new AreaError('area text must be a string');
  if (text.length > MAX_AREA_TEXT_LENGTH) {
    throw new AreaError(`area text is too long: ${text.length} characters, the limit is ${MAX_AREA_TEXT_LENGTH}`);
  }
  if (text.trim() === '') throw new AreaError('area text is empty');
  const reader = new AreaTextReader(text);
  const keyword = reader.readKeyword();
  let area: Area;
  switch (keyword.word.toUpperCase()) {
    case 'CIRCLE':
      area = readCircle(reader);
      break;
    case 'POLYGON':
      area = readPolygon(reader);
      break;
    case 'LINESTRING':
      area = readLineString(reader);
      break;
    default:
      throw reader.errorAt(
        `unknown area kind '${quote(keyword.word)}' (expected CIRCLE, POLYGON or LINESTRING)`,
        keyword.position,
      );
  }
  reader.expectEnd();
  return area;
}

/** Normalised text of an area; numbers use JavaScript's shortest round-trip form, so parseArea inverts it. */
export function formatArea(area: Area): string {
  switch (area.kind) {
    case 'circle':
      return `CIRCLE (${formatPoint(area.center)}, ${String(area.radius)})`;
    case 'polygon':
      return `POLYGON ((${area.points.map(formatPoint).join(', ')}))`;
    case 'linestring':
      return `LINESTRING (${area.points.map(formatPoint).join(', ')})`;
  }
}
