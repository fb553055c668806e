package tracer

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"
)

// TestReadAuxv reads the auxiliary vector from a made-up stack in this
// process: argc, argv, envp, then the pairs up to AT_NULL.
func TestReadAuxv(t *testing.T) {
	strs := []byte("a\x00b\x00")
	p := uint64(uintptr(unsafe.Pointer(&strs[0])))
	var stack []uint64
	stack = append(stack, 2, p, p+2, 0) // argc, argv, NULL
	for i := 0; i < 700; i++ {          // envp longer than one read
		stack = append(stack, p)
	}
	stack = append(stack, 0)
	auxv := []uint64{3, 0x1040, 9, 0x1234, 7, 0x7f0000, 0, 0}
	stack = append(stack, auxv...)
	stack = append(stack, 0xdead, 0xbeef)
	got, err := readAuxv(os.Getpid(), uint64(uintptr(unsafe.Pointer(&stack[0]))))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 8*len(auxv))
	for i, v := range auxv {
		binary.LittleEndian.PutUint64(want[8*i:], v)
	}
	if string(got) != string(want) {
		t.Errorf("auxv = %x, want %x", got, want)
	}
	if _, err := readAuxv(os.Getpid(), 0); err == nil {
		t.Error("a stack at 0: no error")
	}
}
