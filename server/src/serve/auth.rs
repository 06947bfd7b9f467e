//! Tokens: who may read, write, or create and drop. With no token set, every door is open.

use std::path::Path;

use pondra_cluster::{StatementKind, parse_sql};

/// What a token allows; each role allows what the ones before it do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Read,
    Write,
    Admin,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
        }
    }
}

/// The tokens a server accepts.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    read: Vec<String>,
    write: Vec<String>,
    admin: Vec<String>,
}

impl Tokens {
    pub fn new(read: Option<String>, write: Option<String>, admin: Option<String>) -> Tokens {
        Tokens {
            read: read.into_iter().collect(),
            write: write.into_iter().collect(),
            admin: admin.into_iter().collect(),
        }
    }

    /// Adds the tokens of a file of `<role> <token>` lines (`#` starts a comment).
    pub fn add_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the tokens file {}: {e}", path.display()))?;
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let (role, token) = line
                .split_once(char::is_whitespace)
                .map(|(r, t)| (r, t.trim()))
                .ok_or_else(|| {
                    format!(
                        "{}:{}: expected `<role> <token>`",
                        path.display(),
                        number + 1
                    )
                })?;
            let list = match role {
                "read" => &mut self.read,
                "write" => &mut self.write,
                "admin" => &mut self.admin,
                other => {
                    return Err(format!(
                        "{}:{}: unknown role {other} (read, write or admin)",
                        path.display(),
                        number + 1
                    ));
                }
            };
            list.push(token.to_string());
        }
        Ok(())
    }

    /// The token this server shows the other nodes of its cluster, which share its tokens.
    pub fn admin_token(&self) -> Option<String> {
        self.admin.first().cloned()
    }

    pub fn enabled(&self) -> bool {
        !(self.read.is_empty() && self.write.is_empty() && self.admin.is_empty())
    }

    /// The role a presented token grants; every role when no token is set.
    pub fn role_of(&self, token: Option<&str>) -> Result<Role, String> {
        if !self.enabled() {
            return Ok(Role::Admin);
        }
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return Err("a token is required".into());
        };
        let matches = |list: &[String]| list.iter().any(|t| constant_time_eq(t, token));
        if matches(&self.admin) {
            Ok(Role::Admin)
        } else if matches(&self.write) {
            Ok(Role::Write)
        } else if matches(&self.read) {
            Ok(Role::Read)
        } else {
            Err("the token is not valid".into())
        }
    }
}

/// Compares without stopping at the first difference, so timing does not reveal a prefix.
fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The role the statements of `sql` need: queries read; INSERT, UPDATE, DELETE, COPY FROM and
/// CHECKPOINT write; everything else (CREATE, DROP, COPY TO a server file) is admin.
pub fn required_role(sql: &str) -> Result<Role, String> {
    let statements = parse_sql(sql).map_err(|e| e.to_string())?;
    Ok(statements
        .iter()
        .map(|s| match s.statement.kind() {
            StatementKind::Read => Role::Read,
            StatementKind::Write => Role::Write,
            StatementKind::Schema => Role::Admin,
        })
        .max()
        .unwrap_or(Role::Read))
}

/// Checks that `role` may run `sql`; the error says why not.
pub fn authorize(role: Role, sql: &str) -> Result<(), String> {
    let needed = required_role(sql)?;
    if role < needed {
        return Err(format!(
            "permission denied: a {} token cannot run this statement (it needs {})",
            role.name(),
            needed.name()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_come_from_tokens_and_statements() {
        let dir = tempfile_dir();
        let file = dir.join("tokens");
        std::fs::write(&file, "# who may do what\nread r1\nwrite  w1 \nadmin a1\n").unwrap();
        let mut tokens = Tokens::default();
        assert_eq!(
            tokens.role_of(None),
            Ok(Role::Admin),
            "no tokens: every door open"
        );
        tokens.add_file(&file).unwrap();
        assert_eq!(tokens.role_of(Some("r1")), Ok(Role::Read));
        assert_eq!(tokens.role_of(Some("w1")), Ok(Role::Write));
        assert_eq!(tokens.role_of(Some("a1")), Ok(Role::Admin));
        assert!(tokens.role_of(Some("r")).is_err());
        assert!(tokens.role_of(None).is_err());
        std::fs::write(&file, "root x\n").unwrap();
        assert!(
            tokens
                .add_file(&file)
                .unwrap_err()
                .contains("unknown role root")
        );

        assert_eq!(required_role("SELECT 1; SHOW TABLES"), Ok(Role::Read));
        assert_eq!(required_role("SELECT 1; DELETE FROM t"), Ok(Role::Write));
        assert_eq!(required_role("COPY t FROM 'x.csv'"), Ok(Role::Write));
        assert_eq!(required_role("COPY t TO 'x.csv'"), Ok(Role::Admin));
        assert_eq!(required_role("DROP TABLE t"), Ok(Role::Admin));
        assert!(authorize(Role::Write, "CREATE TABLE t (a INT)").is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pondra-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
