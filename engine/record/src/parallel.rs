//! Work spread over the cores without ever panicking for want of a thread: a process or
//! thread limit (the cgroup's `pids.max`, `ulimit -u`) makes `std::thread::scope`'s `spawn`
//! panic; here a part that gets no thread of its own runs on the calling thread instead, so
//! the result is the same, only slower.

/// `f` over `items` in up to `threads` contiguous parts, the results in order. A part whose
/// thread panicked gives `None`.
pub fn map_parts<T, R, F>(items: &[T], threads: usize, f: F) -> Vec<Option<R>>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> R + Sync,
{
    let chunk = items.len().div_ceil(threads.max(1)).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        // Each part: a thread running it, or its result already, computed here.
        let parts: Vec<Result<std::thread::ScopedJoinHandle<'_, R>, R>> = items
            .chunks(chunk)
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || f(part))
                    .map_err(|_| f(part))
            })
            .collect();
        parts
            .into_iter()
            .map(|p| match p {
                Ok(h) => h.join().ok(),
                Err(done) => Some(done),
            })
            .collect()
    })
}

/// Up to 8 threads, one per core.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parts_come_back_in_order() {
        let items: Vec<u32> = (0..100).collect();
        for threads in [1, 3, 8, 200] {
            let sums = super::map_parts(&items, threads, |p| p.iter().sum::<u32>());
            assert_eq!(sums.iter().map(|s| s.unwrap()).sum::<u32>(), 4950);
        }
        assert!(super::map_parts(&[] as &[u32], 4, |p| p.len()).is_empty());
    }
}
