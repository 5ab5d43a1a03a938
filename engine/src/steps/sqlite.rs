//! The `sqlite` step: what a database-backed test suite does to a disk.
//!
//! Many small transactions with `synchronous=FULL`, then indexed reads, through rusqlite's
//! bundled SQLite. It runs in a child process (this same binary, re-executed with a hidden
//! option) so that its CPU, memory and I/O are measured exactly like any other step, by
//! `wait4` and `/proc/<pid>/io`, with nothing of the parent mixed in.
//!
//! Journal mode: WAL. It is what applications and their test fixtures commonly switch on
//! (Rails' default since 7.1, most ORMs recommend it), and with `synchronous=FULL` each
//! commit is one append to the WAL plus one fsync, which maps one-to-one onto the
//! `sync-write` column (a small write, then a sync). The default rollback journal would add a
//! file create/delete and a second sync per commit: slower, but the same kind of wait.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use record::TestResult;

use super::step::{Prepared, Ran, Readiness, Step};

/// The step's id.
pub(crate) const ID: &str = "sqlite";
/// The hidden option of `cargo diskbench steps` that runs the sqlite workload in a child:
/// `--internal-sqlite-worker DB --sqlite-transactions N`.
pub(crate) const WORKER_FLAG: &str = "--internal-sqlite-worker";
/// Transactions of the sqlite step by default (about 2-5 s on a cloud disk).
pub const DEFAULT_TRANSACTIONS: u32 = 2000;

/// The rows each transaction writes: a test inserting a few records and updating one.
const ROWS_PER_TRANSACTION: u32 = 4;
/// Indexed point reads per transaction written, done after the writes.
const READS_PER_TRANSACTION: u32 = 20;

/// The step: [`workload`] in a child, this binary re-executed with [`WORKER_FLAG`].
pub(crate) struct Sqlite {
    transactions: u32,
    /// Program and leading arguments that reach this binary's `steps` command (None: the
    /// current executable with `diskbench steps`).
    worker_command: Option<Vec<OsString>>,
}

impl Sqlite {
    pub(crate) fn new(transactions: Option<u32>, worker_command: Option<Vec<OsString>>) -> Sqlite {
        Sqlite {
            transactions: transactions.unwrap_or(DEFAULT_TRANSACTIONS).max(1),
            worker_command,
        }
    }
}

impl Step for Sqlite {
    fn id(&self) -> &str {
        ID
    }

    fn name(&self) -> String {
        "SQLite: small synced transactions, then indexed reads".into()
    }

    fn check(&self) -> Result<Readiness> {
        Ok(Readiness::Ready)
    }

    fn prepare(&self, work: &Path) -> Result<Prepared> {
        let mut prefix = match &self.worker_command {
            Some(c) if !c.is_empty() => c.clone(),
            _ => vec![
                std::env::current_exe()
                    .context("cannot find this program to run the sqlite worker")?
                    .into(),
                "diskbench".into(),
                "steps".into(),
            ],
        }
        .into_iter();
        let mut cmd = Command::new(prefix.next().unwrap_or_default());
        cmd.args(prefix)
            .arg(WORKER_FLAG)
            .arg(work.join("steps.db"))
            .arg("--sqlite-transactions")
            .arg(self.transactions.to_string())
            .current_dir(work);
        let mut run = Prepared::new(self.name(), cmd);
        run.notes.push(format!(
            "{} transactions (WAL, synchronous=FULL), then {} indexed reads",
            self.transactions,
            u64::from(self.transactions) * u64::from(READS_PER_TRANSACTION)
        ));
        Ok(run)
    }

    /// The time per transaction, beside this disk's sync-write p50 when there is one.
    fn notes(&self, ran: &Ran, columns: &[TestResult]) -> Vec<String> {
        if !ran.measured.succeeded() {
            return Vec::new();
        }
        let per_commit_ms = ran.measured.wall_s * 1e3 / self.transactions as f64;
        let sync_p50 = columns
            .iter()
            .find(|t| t.id == "sync-write")
            .and_then(|t| t.main_direction()?.lat_ns.as_ref()?.p50);
        vec![match sync_p50 {
            Some(p50) => format!(
                "{per_commit_ms:.2} ms of wall time per transaction; this disk's sync-write p50 \
                 is {:.2} ms",
                p50 as f64 / 1e6
            ),
            None => format!("{per_commit_ms:.2} ms of wall time per transaction"),
        }]
    }
}

/// The whole workload, in this process. The step runs it in a child; tests call it directly.
pub fn workload(db_path: &Path, transactions: u32) -> Result<()> {
    let mut conn = rusqlite::Connection::open(db_path)
        .with_context(|| format!("cannot open the database {}", db_path.display()))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    anyhow::ensure!(
        mode.eq_ignore_ascii_case("wal"),
        "{}: SQLite refused WAL (journal_mode = {mode})",
        db_path.display()
    );
    conn.execute_batch(
        "PRAGMA synchronous=FULL;
         CREATE TABLE items (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, n INTEGER NOT NULL,
                             body BLOB NOT NULL);
         CREATE INDEX items_owner ON items(owner, n);",
    )?;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for t in 0..transactions {
        let tx = conn.transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT INTO items (owner, n, body) VALUES (?1, ?2, ?3)")?;
            for r in 0..ROWS_PER_TRANSACTION {
                let body: Vec<u8> = (0..25).flat_map(|_| next().to_le_bytes()).collect();
                insert.execute(rusqlite::params![format!("user-{}", t % 97), r, body])?;
            }
            tx.execute(
                "UPDATE items SET n = n + 1 WHERE owner = ?1 AND n = 0",
                [format!("user-{}", next() % 97)],
            )?;
        }
        tx.commit()?;
    }
    // Point reads through the index, each of constant cost: an aggregate over every matching
    // row grew with the table (quadratic in --sqlite-transactions) and turned the step from
    // waiting on syncs into computing once the table was large.
    let mut select = conn.prepare(
        "SELECT count(*) FROM (SELECT length(body) FROM items WHERE owner = ?1 AND n = ?2 \
         ORDER BY id DESC LIMIT 1)",
    )?;
    let mut seen: i64 = 0;
    for _ in 0..transactions * READS_PER_TRANSACTION {
        let owner = format!("user-{}", next() % 97);
        let n = (next() % ROWS_PER_TRANSACTION as u64) as i64;
        seen += select.query_row(rusqlite::params![owner, n], |r| r.get::<_, i64>(0))?;
    }
    anyhow::ensure!(seen > 0, "the indexed reads found no rows");
    drop(select);
    conn.close().map_err(|(_, e)| e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_writes_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("t.db");
        workload(&db, 20).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 20 * ROWS_PER_TRANSACTION as i64);
    }
}
