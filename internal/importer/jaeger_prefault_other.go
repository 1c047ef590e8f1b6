//go:build !linux

package importer

// prefault does nothing here (jaeger_prefault_linux.go).
func prefault([]byte) (stop func()) { return func() {} }
