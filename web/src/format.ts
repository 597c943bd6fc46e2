/**
 * Speeds, distances and numbers as the person reads them: numbers in the browser's locale (Intl), and
 * speeds and distances in the units chosen on the account screen, kept in the user's attributes
 * (`speedUnit`, `distanceUnit`: PUT /api/auth/profile). Every screen that shows one goes through here.
 */
import { useQuery } from '@tanstack/react-query';
import type { User } from '../../src/client/index.ts';
import { queryKeys } from './queryKeys.ts';

export const SPEED_UNITS = ['kmh', 'mph', 'kn'] as const;
export const DISTANCE_UNITS = ['km', 'mi'] as const;
export type SpeedUnit = (typeof SPEED_UNITS)[number];
export type DistanceUnit = (typeof DISTANCE_UNITS)[number];
export interface Units {
  speed: SpeedUnit;
  distance: DistanceUnit;
}

const KMH_PER_KNOT = 1.852;
const MPH_PER_KNOT = 1.150779;
const METRES_PER_MILE = 1609.344;

/** The units a user chose; kilometres until they choose. */
export function unitsOf(user: Pick<User, 'attributes'> | null | undefined): Units {
  const speed = user?.attributes.speedUnit;
  const distance = user?.attributes.distanceUnit;
  return {
    speed: SPEED_UNITS.find((unit) => unit === speed) ?? 'kmh',
    distance: DISTANCE_UNITS.find((unit) => unit === distance) ?? 'km',
  };
}

/** The signed-in user's units, from the profile the app already holds. */
export function useUnits(): Units {
  const profile = useQuery<User | null>({ queryKey: queryKeys.profile, enabled: false });
  return unitsOf(profile.data);
}

/** A speed reported in knots (the positions' unit), in the unit chosen. */
export function speedIn(knots: number, unit: SpeedUnit): number {
  return unit === 'kmh' ? knots * KMH_PER_KNOT : unit === 'mph' ? knots * MPH_PER_KNOT : knots;
}

const SPEED_SUFFIX: Record<SpeedUnit, string> = { kmh: 'km/h', mph: 'mph', kn: 'kn' };

export function speedSuffix(unit: SpeedUnit): string {
  return SPEED_SUFFIX[unit];
}

/** "54 km/h", "34 mph", "29 kn", the number in the browser's locale. */
export function formatSpeed(knots: number, unit: SpeedUnit): string {
  return `${formatNumber(speedIn(knots, unit), 0)} ${SPEED_SUFFIX[unit]}`;
}

/** "850 m" or "12.4 km"; "0.5 mi" or "7.7 mi". */
export function formatDistance(metres: number, unit: DistanceUnit): string {
  if (unit === 'mi') return `${formatNumber(metres / METRES_PER_MILE, 1)} mi`;
  return metres < 1000 ? `${formatNumber(metres, 0)} m` : `${formatNumber(metres / 1000, 1)} km`;
}

export function formatNumber(value: number, fractionDigits = 0): string {
  return new Intl.NumberFormat(undefined, { maximumFractionDigits: fractionDigits, minimumFractionDigits: fractionDigits }).format(value);
}

/** A moment in the browser's locale and time zone: date and time, or "never". */
export function formatDateTime(iso: string, options: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'medium' }): string {
  return new Intl.DateTimeFormat(undefined, options).format(new Date(iso));
}
