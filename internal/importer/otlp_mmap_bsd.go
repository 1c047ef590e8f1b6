//go:build unix && !linux

package importer

const mapPopulate = 0
