package rstate

import "strings"

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// KeySlot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT
// does: CRC16 (XMODEM) mod 16384 of the key's hash tag, the part between the
// first '{' and the next '}' when that part is not empty, else of the whole
// key.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// of the Redis Cluster specification.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
