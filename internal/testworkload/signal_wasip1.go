//go:build wasip1

package main

import "os"

// stopSignal: a wasm module is stopped by closing it; no signal arrives.
func stopSignal() <-chan os.Signal { return nil }
