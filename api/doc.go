// Package api is amserver's Go client and the JSON wire types of its HTTP API
// (DESIGN §7). It is a leaf: standard library only, so the CLI, workers, tests
// and benchmarks can use it without pulling in the server.
//
// Quantities are API units (capacity 2.5); the server converts them to the
// milli-units its state machine uses.
package api
