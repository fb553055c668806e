package pathmap

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(oracleEnv); cfg != "" {
		oracleChild(cfg)
	}
	os.Exit(m.Run())
}
