package gosync

// WaitActivatedCounting exposes waitActivated's read hook to the external
// tests of this package.
var WaitActivatedCounting = waitActivated
