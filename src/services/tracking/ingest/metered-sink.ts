import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { IMPLAUSIBLE_VALUE_REASONS } from '../protocols/plausibility.ts';
import { DEVICE_PROTOCOLS } from '../protocols/registry.ts';
import type { IngestSink } from './sink.ts';

/**
 * The sink as the device listeners see it, counting what passes through: position reports (fixes
 * and status-only reports) stored or refused, per protocol; frames kept despite a checksum, length or
 * trailer that did not match (a sloppy firmware, see DecodedMessage.checksumMismatch); values not
 * stored as sent (see plausibility.ts and the pipeline's status reports without a fix); identifications
 * refused (unknown or disabled device); device TCP sessions open.
 */
export function meteredSink(sink: IngestSink, metrics: Registry): IngestSink {
  const reports = new Counter({
    name: 'trackstack_ingest_positions_total',
    help: 'Position reports from devices, by protocol and outcome: accepted once durable, refused when the device was refused or the write failed',
    labelNames: ['protocol', 'outcome'] as const,
    registers: [metrics],
  });
  for (const protocol of DEVICE_PROTOCOLS) for (const outcome of ['accepted', 'refused']) reports.inc({ protocol, outcome }, 0);
  const checksumMismatches = new Counter({
    name: 'trackstack_ingest_checksum_mismatches_total',
    help: 'Device messages whose checksum, length field or trailer did not match but whose content decoded, kept as Traccar keeps them, by protocol',
    labelNames: ['protocol'] as const,
    registers: [metrics],
  });
  for (const protocol of DEVICE_PROTOCOLS) checksumMismatches.inc({ protocol }, 0);
  const implausibleValues = new Counter({
    name: 'trackstack_ingest_implausible_values_total',
    help: 'Values from devices not stored as sent, by protocol and reason: course_out_of_range and negative_speed stored as 0, no_fix a status report sent before the device\'s first fix, not stored',
    labelNames: ['protocol', 'reason'] as const,
    registers: [metrics],
  });
  for (const protocol of DEVICE_PROTOCOLS) for (const reason of IMPLAUSIBLE_VALUE_REASONS) implausibleValues.inc({ protocol, reason }, 0);
  const unknownDevices = new Counter({
    name: 'trackstack_ingest_unknown_devices_total',
    help: 'Identifications refused: no device has the uniqueId, or it is disabled',
    registers: [metrics],
  });
  const connections = new Gauge({
    name: 'trackstack_device_connections',
    help: 'Device TCP connections whose device has identified itself',
    registers: [metrics],
  });

  return {
    async identify(uniqueId) {
      const device = await sink.identify(uniqueId);
      if (!device) unknownDevices.inc();
      return device;
    },
    async accept(device, protocol, message, receivedAt) {
      const count = message.positions.length + message.statuses.length;
      let accepted;
      try {
        accepted = await sink.accept(device, protocol, message, receivedAt);
      } catch (error) {
        reports.inc({ protocol, outcome: 'refused' }, count);
        throw error;
      }
      reports.inc({ protocol, outcome: 'accepted' }, count);
      if (message.checksumMismatch) checksumMismatches.inc({ protocol });
      for (const reason of message.normalised ?? []) implausibleValues.inc({ protocol, reason });
      if (accepted.withoutFix > 0) implausibleValues.inc({ protocol, reason: 'no_fix' }, accepted.withoutFix);
      return accepted;
    },
    connected(device) {
      connections.inc();
      sink.connected(device);
    },
    disconnected(device) {
      connections.dec();
      sink.disconnected(device);
    },
  };
}
