package emul

import (
	"testing"

	"github.com/droidroot/droidroot/tracer/tracertest"
)

// TestMain lets the test binary serve as tracertest's child.
func TestMain(m *testing.M) { tracertest.Main(m) }
