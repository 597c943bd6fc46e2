// Reflected CRC-16 variants used by device protocols, table driven.

function reflectedTable(polynomial: number): Uint16Array {
  const table = new Uint16Array(256);
  for (let index = 0; index < 256; index++) {
    let crc = index;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 1 ? (crc >>> 1) ^ polynomial : crc >>> 1;
    }
    table[index] = crc;
  }
  return table;
}

const X25_TABLE = reflectedTable(0x8408);
const ARC_TABLE = reflectedTable(0xa001);

function reflectedCrc(table: Uint16Array, initial: number, data: Uint8Array): number {
  let crc = initial;
  for (const byte of data) {
    crc = (crc >>> 8) ^ table[(crc ^ byte) & 0xff]!;
  }
  return crc;
}

// CRC-16/X-25 (poly 0x1021 reflected, init 0xFFFF, xorout 0xFFFF), used by GT06.
export function crc16X25(data: Uint8Array): number {
  return (reflectedCrc(X25_TABLE, 0xffff, data) ^ 0xffff) & 0xffff;
}

// CRC-16/ARC, also called CRC-16/IBM (poly 0x8005 reflected, init 0), used by Teltonika.
export function crc16Ibm(data: Uint8Array): number {
  return reflectedCrc(ARC_TABLE, 0, data);
}

// CRC-16/KERMIT (poly 0x1021 reflected, init 0, no xorout), used by Ruptela.
export function crc16Kermit(data: Uint8Array): number {
  return reflectedCrc(X25_TABLE, 0, data);
}

// CRC-16/MODBUS (poly 0x8005 reflected, init 0xFFFF, no xorout), used by Galileosky.
export function crc16Modbus(data: Uint8Array): number {
  return reflectedCrc(ARC_TABLE, 0xffff, data);
}
