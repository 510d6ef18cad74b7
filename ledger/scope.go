package ledger

import (
	"errors"
	"fmt"
	"strings"
)

// Aggregate scopes: reservation ceilings above a pool. The cluster's caps
// cover every reservation; a cap group's cover the reservations of the
// pools that joined it. A scope's caps and usage live in the same namespace
// as pools' (Store.Pool, Store.SetPoolUsage) under names no pool can have
// (pool names start with a letter or digit), so every Store, overlay and
// undo journal carries them without a second set of methods.
const (
	// ClusterScope names the cluster-wide caps and usage.
	ClusterScope = "~cluster"
	groupPrefix  = "~group:"
)

// Dimension names of the aggregate caps (the explain stages).
const (
	DimClusterCaps = "clusterCaps"
	DimGroupCaps   = "groupCaps"
)

// GroupScope names a cap group's caps and usage.
func GroupScope(group string) string { return groupPrefix + group }

// IsScope reports whether a Store.Pool name is an aggregate scope rather
// than a pool.
func IsScope(name string) bool { return strings.HasPrefix(name, "~") }

// ScopeGroup returns the cap group a scope name stands for; ok is false for
// the cluster and for pools.
func ScopeGroup(scope string) (group string, ok bool) {
	return strings.CutPrefix(scope, groupPrefix)
}

// ScopesOf lists the scopes a pool in the cap group ("" for none) counts
// against, narrowest first: its group's, then the cluster's.
func ScopesOf(group string) []string {
	if group == "" {
		return []string{ClusterScope}
	}
	return []string{GroupScope(group), ClusterScope}
}

// CheckScope is CheckPool for an aggregate scope: the error's dimension and
// detail say which cap would be exceeded.
func CheckScope(scope string, caps PoolCaps, used PoolUsage, g Grant) error {
	err := CheckPool(caps, used, g)
	if err == nil {
		return nil
	}
	var ex *ExhaustedError
	if !errors.As(err, &ex) {
		return err
	}
	if group, ok := ScopeGroup(scope); ok {
		return &ExhaustedError{Dimension: DimGroupCaps, Detail: fmt.Sprintf("cap group %s %s", group, ex.Detail)}
	}
	return &ExhaustedError{Dimension: DimClusterCaps, Detail: "cluster " + ex.Detail}
}

// checkScopes checks g against every scope the pool counts against.
func checkScopes(s Store, pool string, g Grant) error {
	for _, sc := range s.PoolScopes(pool) {
		caps, used := s.Pool(sc)
		if err := CheckScope(sc, caps, used, g); err != nil {
			return err
		}
	}
	return nil
}

// addScopes adds g to (or, with sub, takes it from) every scope's usage.
func addScopes(s Store, pool string, g Grant, sub bool) {
	for _, sc := range s.PoolScopes(pool) {
		_, used := s.Pool(sc)
		if sub {
			s.SetPoolUsage(sc, used.Sub(g))
		} else {
			s.SetPoolUsage(sc, used.Add(g))
		}
	}
}

// BookUnchecked books r without any check: the FSM's planted
// skip-the-re-check bug, which must still keep the books balanced so that
// only the over-commit it plants is wrong.
func BookUnchecked(s Store, r Reservation) {
	_, used, _ := s.Node(r.Node)
	_, pool := s.Pool(r.Pool)
	s.SetUsage(r.Node, used.Add(r.Grant))
	s.SetPoolUsage(r.Pool, pool.Add(r.Grant))
	addScopes(s, r.Pool, r.Grant, false)
	s.PutReservation(r.Clone())
}

// Plus is the sum of two usages (a pool's usage moving into a cap group).
func (p PoolUsage) Plus(o PoolUsage) PoolUsage {
	return PoolUsage{Capacity: p.Capacity + o.Capacity, Cores: p.Cores + o.Cores, MemoryMiB: p.MemoryMiB + o.MemoryMiB}
}

// Minus is p without o.
func (p PoolUsage) Minus(o PoolUsage) PoolUsage {
	return PoolUsage{Capacity: p.Capacity - o.Capacity, Cores: p.Cores - o.Cores, MemoryMiB: p.MemoryMiB - o.MemoryMiB}
}
