//! `pondra serve`'s Postgres door with the Postgres JDBC driver, which DBeaver and Metabase
//! connect through: the catalog metadata they browse, and a prepared statement.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Served;

/// The driver jar: `PONDRA_JDBC_JAR`, else where Debian's libpostgresql-jdbc-java puts it.
fn driver_jar() -> String {
    std::env::var("PONDRA_JDBC_JAR").unwrap_or_else(|_| "/usr/share/java/postgresql.jar".into())
}

#[test]
fn jdbc_metadata_and_prepared_statement() {
    let classes = tempfile::tempdir().unwrap();
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/java/JdbcClient.java");
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(classes.path())
        .arg(source)
        .output()
        .expect("run javac (a JDK)");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let jar = driver_jar();
    assert!(Path::new(&jar).exists(), "no JDBC driver at {jar}");

    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    let classpath = format!("{jar}:{}", classes.path().display());
    let output = Command::new("java")
        .args(["-cp", &classpath, "JdbcClient", &port])
        .output()
        .expect("run java");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ok\n");
}
