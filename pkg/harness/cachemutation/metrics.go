package cachemutation

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "watch_cache_mutation_detector"

var (
	findingsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "findings_total",
		Help:           "Read-path writes into objects shared with the watch cache, by resource and the verb of the request that held the object (debugging aid, off by default).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"group", "resource", "verb"})

	handoutsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "handouts_total",
		Help: "Objects handed out by the wrapped storage, by resource, storage operation (get, list, watch) and sharing: " +
			"shared and unknown are tracked, private (not shared with the cache) and untracked (over the tracking cap) are not.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"group", "resource", "operation", "sharing"})

	comparisonsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "comparisons_total",
		Help:           "Comparisons of tracked objects with their fingerprint, by trigger (completion, periodic, expiry).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"trigger"})

	holdingRequests = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: metricsSubsystem,
		Name:      "holding_requests",
		Help: "Storage reads (Get, GetList, watches) whose request has not completed yet: their objects are held and " +
			"not yet compared at completion. 0 means every read so far was compared after its request ended.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the detector's metrics in the legacy registry
// once per process, when the first Detector is created.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(findingsTotal, handoutsTotal, comparisonsTotal, holdingRequests)
	})
}
