// Package api is amserver's Go client and the JSON wire types of its HTTP API
// (DESIGN §7). It is a leaf: standard library only, so the CLI, workers, tests
// and benchmarks can use it without pulling in the server.
//
// Quantities are API units (capacity 2.5); the server converts them to the
// milli-units its state machine uses.
//
// The types here are the one definition of the data model: the server's
// state machine uses those without units (Launch, Placement, ...) as they
// are, and pairs the others with its own field by field. A `row:"N"` tag
// numbers a field in the server's snapshot records: numbers are never
// reused, and a new field takes the next one.
package api
