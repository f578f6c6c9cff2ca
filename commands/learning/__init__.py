"""The self-improvement loop's decisions (seed 6.3, 6.5): value propagated back along a rewarded trace,
skills crystallised from useful patterns and their trials."""
