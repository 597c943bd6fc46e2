import { galileoProtocol } from '../src/services/tracking/protocols/galileo/decoder.ts';
import { gl200Protocol } from '../src/services/tracking/protocols/gl200/decoder.ts';
import { gps103Protocol } from '../src/services/tracking/protocols/gps103/decoder.ts';
import { jt808Protocol } from '../src/services/tracking/protocols/jt808/decoder.ts';
import { meitrackProtocol } from '../src/services/tracking/protocols/meitrack/decoder.ts';
import { ruptelaProtocol } from '../src/services/tracking/protocols/ruptela/decoder.ts';
import { suntechProtocol } from '../src/services/tracking/protocols/suntech/decoder.ts';
import { tk103Protocol } from '../src/services/tracking/protocols/tk103/decoder.ts';
import { watchProtocol } from '../src/services/tracking/protocols/watch/decoder.ts';
import { wialonProtocol } from '../src/services/tracking/protocols/wialon/decoder.ts';
import type { TcpProtocol } from '../src/services/tracking/protocols/types.ts';
import type { Figure } from './measure.ts';

/**
 * Decode time per frame of the protocols added with issue 17: splitFrames and decode of one
 * captured frame (Traccar's published test frames), in a loop, from this process. Pure CPU: no
 * socket, no database.
 */
export interface DecodeCase {
  protocol: TcpProtocol;
  /** What the frame is, for the report. */
  label: string;
  frame: Buffer;
}

export const NEW_PROTOCOL_DECODE_CASES: readonly DecodeCase[] = [
  {
    protocol: jt808Protocol,
    label: 'jt808 location 0x0200 with items',
    frame: Buffer.from('7e02000033421030000018004c000200000004000201556dcb06c4d41d000c00f100fc210118095853010400000000fe0140ff0c01cc000000002694000055d87a7e', 'hex'),
  },
  {
    protocol: jt808Protocol,
    label: 'jt808 batch 0x0704 of 8 locations',
    frame: Buffer.from('7E0704014301356777777707F5000801002600000000000000030159741206CBFD5001720000000116052709062401040000001D03020000002600000000000000030159746606CBFD50016B0000000116052709065301040000001D0302000000260000000000000003015975E406CBFE58013F0000000116052709072701040000001D0302000000260000000000000003015976DE06CBFF10012E0000000116052709075601040000001D0302000000260000000000000003015976BC06CBFED0012D0000000116052709083001040000001D0302000000260000000000000003015976FE06CBFEC001080000000116052709090001040000001D0302000000260000000000000003015976FE06CBFE7800FC0000000116052709093301040000001D0302000000260000000000000003015977A606CBFF3001080000000116052709100201040000001D030200001F7E', 'hex'),
  },
  {
    protocol: gps103Protocol,
    label: 'gps103 tracker report',
    frame: Buffer.from('imei:353451044508750,001,0809231929,13554900601,F,055403.000,A,2233.1870,N,11354.3067,E,0.00,30.1,65.43,1,0,10.5%,0.0%,28;', 'latin1'),
  },
  {
    protocol: tk103Protocol,
    label: 'tk103 BR00 location',
    frame: Buffer.from('(088047365460BR00151024A2555.3531S02855.3329E004.7055148276.1701000000L00009AA3)', 'latin1'),
  },
  {
    protocol: wialonProtocol,
    label: 'wialon extended data line',
    frame: Buffer.from('#D#270413;205601;5544.6025;N;03739.6834;E;1;2;3;4;0.0;0;0;14.77,0.02,3.6;NA;count1:1:564,fuel:2:45.8,hw:3:V4.5\r\n', 'latin1'),
  },
  {
    protocol: watchProtocol,
    label: 'watch UD location',
    frame: Buffer.from('[3G*4700222306*0077*UD,120316,140444,A,48.779045,N,9.1574736,E,0.57,12.8,0.0,4,100,85,0,0,00000000,1,0,262,2,,,,,,,,,]', 'latin1'),
  },
  {
    protocol: meitrackProtocol,
    label: 'meitrack AAA report',
    frame: Buffer.from('$$B140,013777001293701,AAA,35,-7.266760,112.743550,140521095314,A,3,22,0,275,2.7,45,1984,8059,510|1|3504|EBFE,0000,0000|0000|0000|0914|0002,,*F9\r\n', 'latin1'),
  },
  {
    protocol: suntechProtocol,
    label: 'suntech ST300 STT report',
    frame: Buffer.from('ST300STT;007238270;40;313;20190220;12:05:04;c99e48;+04.644623;-074.076922;010.390;202.77;20;1;997100;14.10;100000;2;8384;003634;4.1;1\r', 'latin1'),
  },
  {
    protocol: gl200Protocol,
    label: 'gl200 GTFRI report',
    frame: Buffer.from('+RESP:GTFRI,060228,862894020180553,,,10,1,1,20.0,147,329.7,-62.899703,-17.720434,20160309113548,0736,0003,6AAE,3381,00,913.3,,,,0,220101,,,,20160309073554,132B$', 'latin1'),
  },
  {
    protocol: ruptelaProtocol,
    label: 'ruptela records message',
    frame: Buffer.from('009200000c07a6bacd4701000552db5cc20000187b8b251ace478e087c044c0a000009070000000052db5cfe0000187b8ab01ace47190879044c0900000b070000000052db5d3a0000187b8b251ace474b089d044c09000009070000000052db5d760000187b8b9a1ace475c08cd044c08000009070000000052db5db20000187b8b141ace46e708b3044c08000009070000000041cb', 'hex'),
  },
  {
    protocol: galileoProtocol,
    label: 'galileo main packet',
    frame: Buffer.from('011801018202130338363833343530333230343234323604640010a406207caa9f5b300c830a7901ca0ec802330000000034b802350540003e41703f422b1043234504004600e09000000000a000a100a200a300a400a500a600a700a800a900aa00ab00ac00ad00ae00af00b00000b10000b20000b30000b40000b50000b60000b70000b80000b90000c000000000c100000000c200000000c300000000c400c500c600c700c800c900ca00cb00cc00cd00ce00cf00d000d100d200d4d3140000d60000d70000d80000d90000da0000db00000000dc00000000dd00000000de00000000df00000000f000000000f100000000f200000000f300000000f400000000f500000000f600000000f700000000f800000000f9000000008960', 'hex'),
  },
];

const NOW = new Date('2025-01-01T00:00:00Z');
const MEASURE_MS = 500;

/** Microseconds per frame: splitFrames and decode, best of three timed loops after a warm-up. */
export function decodeMicroseconds({ protocol, frame }: DecodeCase): number {
  const once = () => {
    const { frames } = protocol.splitFrames(frame, {});
    for (const each of frames) protocol.decode(each, {}, NOW);
  };
  for (let index = 0; index < 2000; index++) once();
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    let count = 0;
    const started = performance.now();
    while (performance.now() - started < MEASURE_MS) {
      for (let index = 0; index < 100; index++) once();
      count += 100;
    }
    best = Math.min(best, ((performance.now() - started) * 1000) / count);
  }
  return best;
}

export function benchDecodeNewProtocols(): Figure[] {
  return NEW_PROTOCOL_DECODE_CASES.map((entry) => ({ name: entry.label, value: `${decodeMicroseconds(entry).toFixed(2)} µs/frame` }));
}

if (import.meta.main) {
  console.log('\nDecode (new protocols)');
  for (const figure of benchDecodeNewProtocols()) console.log(`  ${figure.name.padEnd(56)} ${figure.value}`);
}
