package iotest

import (
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	if err := (Options{Runtime: time.Second}).Validate(); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
	for _, o := range []Options{{}, {Runtime: time.Second, Ramp: -1}, {Runtime: time.Second, Engine: "aio"}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
