package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// benchBundle is a placed two-job bundle with a backup, as a list page
// holds a thousand of.
func benchBundle() *fsm.Bundle {
	job := func(name string) fsm.Job {
		return fsm.Job{Name: name, Requirements: ledger.Request{Capacity: 2500, Cores: 2},
			NodeRules: &fsm.NodeRules{Constraints: []string{`node.labels.rack != "r7"`}}, Launch: fsm.Launch{Driver: "exec", Command: []string{"ffmpeg", "-i"}}}
	}
	place := func(node string) []fsm.JobPlacement {
		g := ledger.Grant{Capacity: 2500, Cores: []int{0, 1}}
		return []fsm.JobPlacement{{Name: "enc", NodeID: node, Grant: g, Status: "running"}, {Name: "mux", NodeID: node, Grant: g, Status: "running"}}
	}
	return &fsm.Bundle{
		Spec: fsm.BundleSpec{ID: "b0000001", Pool: "p", Priority: "silver", Jobs: []fsm.Job{job("enc"), job("mux")},
			Placement: fsm.Placement{SameAz: "off"}, Resilience: &fsm.Resilience{SameNode: "forbid", SameAz: "allow", SameCloud: "allow"},
			StartAt: 1.9e18, Tags: map[string]string{"team": "video"}},
		State: "placed", Epoch: 3, CreateIndex: 10, ModifyIndex: 12,
		Replicas: []fsm.Replica{{Slot: 0, Role: "primary", State: "placed", Jobs: place("n1")}, {Slot: 1, Role: "backup", State: "placed", Jobs: place("n2")}},
	}
}

func BenchmarkBundleToAPI(b *testing.B) {
	bundle := benchBundle()
	b.ReportAllocs()
	for b.Loop() {
		_ = bundleToAPI(bundle)
	}
}

func BenchmarkSpecFromAPI(b *testing.B) {
	in := specToAPI(&benchBundle().Spec)
	b.ReportAllocs()
	for b.Loop() {
		if _, problems := specFromAPI(in); len(problems) > 0 {
			b.Fatal(problems)
		}
	}
}

// BenchmarkBundleRead is a list entry's whole cost: conversion and JSON.
func BenchmarkBundleRead(b *testing.B) {
	bundle := benchBundle()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(bundleToAPI(bundle)); err != nil {
			b.Fatal(err)
		}
	}
}
