package api

import "crypto/rand"

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// IDLength is the length of generated ids.
const IDLength = 12

// NewID returns a random id of IDLength characters from [a-z0-9], which is
// a valid bundle id. 36^12 ≈ 4.7e18 values: collisions are not a concern.
func NewID() string {
	var b [IDLength]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b[:])
}
