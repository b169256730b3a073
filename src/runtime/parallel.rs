//! Thread pools: the global one for "all cores", a cached pool per explicit thread count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::{Error, Result};

static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();

/// The most threads a call may ask for.
pub const MAX_THREADS: i64 = 1024;

/// Runs `f` on `threads` threads (`None`: rayon's global pool, one thread per core).
pub fn with_threads<R: Send>(threads: Option<i64>, f: impl FnOnce() -> R + Send) -> Result<R> {
    let Some(threads) = threads else {
        return Ok(f());
    };
    if !(1..=MAX_THREADS).contains(&threads) {
        return Err(Error::invalid(format!(
            "threads must be in 1..={MAX_THREADS}, got {threads}"
        )));
    }
    let pool = {
        let mut pools = POOLS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match pools.get(&(threads as usize)) {
            Some(pool) => Arc::clone(pool),
            None => {
                let pool = ThreadPoolBuilder::new()
                    .num_threads(threads as usize)
                    .thread_name(|i| format!("neardup-{i}"))
                    .build()
                    .map_err(|e| Error::invalid(format!("cannot start {threads} threads: {e}")))?;
                let pool = Arc::new(pool);
                pools.insert(threads as usize, Arc::clone(&pool));
                pool
            }
        }
    };
    Ok(pool.install(f))
}
