//go:build unix && !linux

package mmap

const mapPopulate = 0
