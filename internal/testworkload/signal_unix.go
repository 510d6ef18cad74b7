//go:build !wasip1

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignal: as PID 1 of a container the program gets no default
// handling of SIGTERM, so it must catch it to stop promptly.
func stopSignal() <-chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	return c
}
