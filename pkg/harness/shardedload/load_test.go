package shardedload

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestCacheListersValid(t *testing.T) {
	o := CacheListers([]string{"root"}, time.Second)
	o.Config = &rest.Config{Host: "https://127.0.0.1:1" + CachePrefix}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range o.ListerShapes {
		if s.KCPMetadataClient {
			t.Errorf("the cache server's listers include kcp's metadata client (%s)", s.Name())
		}
	}
}
