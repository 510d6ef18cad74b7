package workload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/amserver/amserver/api"
)

// Setup makes sure the pool exists and registers reg-0..reg-{Keys-1} exist
// holding 0, retrying transient failures (noLeader, outcomeUnknown, other
// 5xx, transport errors) on every server in turn until ok or ctx ends.
// It is idempotent: an identical create answers 200, and a register left
// with another value by an earlier run is reset to 0, because the
// linearizability checker assumes every register starts at 0.
//
// Each step is done only once a linearizable read shows it (errNotVisible
// otherwise, and the step is tried again): the registers are validated
// against the pool, and the workload and its checkers start from the
// registers at 0. Against a correct cluster the read after an acknowledged
// write always shows it, so this costs one read a step. A cluster that
// acknowledges before it commits (the planted early-ack bug) would
// otherwise fail the setup itself, at random, instead of the checkers
// catching it in the run: the register created right after the pool was
// refused (422 unknownPoolName) whenever it reached the leader before the
// pool committed.
func Setup(ctx context.Context, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	cls, err := cfg.clients()
	if err != nil {
		return err
	}
	if err := retry(ctx, cfg, cls, "pool "+cfg.Pool, func(ctx context.Context, c *api.Client) error {
		if err := ensurePool(ctx, c, cfg.Pool); err != nil {
			return err
		}
		return poolVisible(ctx, c, cfg.Pool)
	}); err != nil {
		return err
	}
	for i := range cfg.Keys {
		key := RegisterKey(i)
		if err := retry(ctx, cfg, cls, "register "+key, func(ctx context.Context, c *api.Client) error {
			if err := ensureRegister(ctx, c, cfg.Pool, key); err != nil {
				return err
			}
			return registerVisible(ctx, c, key)
		}); err != nil {
			return err
		}
	}
	return nil
}

// retry runs fn against each server in turn until it succeeds, fails
// definitely, or ctx ends.
func retry(ctx context.Context, cfg Config, cls []*api.Client, what string, fn func(context.Context, *api.Client) error) error {
	for attempt := 0; ; attempt++ {
		octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
		err := fn(octx, cls[attempt%len(cls)])
		cancel()
		if err == nil {
			return nil
		}
		if !transient(err) {
			return fmt.Errorf("workload setup: %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workload setup: %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errNotVisible: a setup write was acknowledged, but a linearizable read
// does not show it yet. Transient: the step is tried again.
var errNotVisible = errors.New("acknowledged but not shown by a linearizable read")

// poolVisible reads the pool back.
func poolVisible(ctx context.Context, c *api.Client, name string) error {
	_, _, err := c.Pool(ctx, name, nil)
	if api.IsCode(err, api.CodeNotFound) {
		return fmt.Errorf("pool %s: %w", name, errNotVisible)
	}
	return err
}

// registerVisible reads the register back and wants it at 0.
func registerVisible(ctx context.Context, c *api.Client, key string) error {
	b, _, err := c.Bundle(ctx, key, nil)
	if api.IsCode(err, api.CodeNotFound) {
		return fmt.Errorf("register %s: %w", key, errNotVisible)
	}
	if err != nil {
		return err
	}
	v, err := RegisterValue(b)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotVisible, err)
	}
	if v != 0 {
		return fmt.Errorf("register %s holds %d, not 0: %w", key, v, errNotVisible)
	}
	return nil
}

// transient reports whether an error may go away by itself: anything but
// a definite 4xx answer.
func transient(err error) bool {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return true
	}
	return ae.Status >= 500
}

// ensurePool creates the pool when it is missing and leaves an existing
// one alone: the cluster's operator may have configured it (tiers, caps).
func ensurePool(ctx context.Context, c *api.Client, name string) error {
	_, _, err := c.Pool(ctx, name, nil)
	if err == nil || !api.IsCode(err, api.CodeNotFound) {
		return err
	}
	_, err = c.PutPool(ctx, api.Pool{Name: name, Kind: api.PoolCluster})
	return err
}

// ensureRegister creates the register holding 0; if it exists with
// another spec (another value), it is reset to 0 unconditionally.
func ensureRegister(ctx context.Context, c *api.Client, pool, key string) error {
	spec := RegisterSpec(pool, key, 0)
	_, err := c.CreateBundle(ctx, spec)
	var ae *api.Error
	if err == nil || !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		return err
	}
	_, err = c.ReplaceBundle(ctx, spec, 0)
	return err
}
