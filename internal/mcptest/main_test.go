package mcptest_test

import (
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

func TestMain(m *testing.M) { mcptest.Main(m) }
