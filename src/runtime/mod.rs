//! Runtime: what the core takes from the machine and the process.
//!
//! * [`simd`]: every use of the CPU's vector instructions, beside the portable code it must
//!   equal, and the switch that forces the portable code.
//! * [`parallel`]: thread pools.
//! * [`memory`]: the memory a call may still allocate.
//! * [`interrupt`]: the flag that stops long calls early (Ctrl-C).
//! * [`map_guard`]: a mapped file truncated under a call faults into zeros, not SIGBUS.

pub mod interrupt;
pub mod map_guard;
pub mod memory;
pub mod parallel;
pub mod simd;
