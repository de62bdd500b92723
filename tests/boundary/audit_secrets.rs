//! Issue 10, items 5 and 6, through the real write path: a command is given to `AuditLogger` as
//! an exec event, and the log file is read back. No secret shape may reach the file (and a
//! redaction marker must stand where it was); no here-document body, inline program or
//! assignment value may reach it either, while the executable summary still does.

use spear::harness::audit::{AuditEvent, AuditTarget, Decision};
use spear::harness::command_policy::CommandClass;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::harness::secrets::REDACTED;

use super::audit::Fixture;

/// Append `command` as an exec record and return the log file's whole text.
fn logged(command: &str) -> String {
    let f = Fixture::new();
    let logger = f.logger();
    let mut e = AuditEvent::new("s-secrets", "terminal", Decision::Allowed);
    e.target = AuditTarget::Command(command.to_string());
    e.class = Some(CommandClass::ShellComplex);
    e.mode = Some(ExecutionMode::Auto);
    e.status = Some(ToolStatus::Ok);
    logger.append(&e).unwrap();
    let text = std::fs::read_to_string(&logger.paths().log).unwrap();
    // Proof the record was written: one line, naming the tool.
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"tool\":\"terminal\""), "{text}");
    text
}

/// (command, the secret that must not be logged, a non-secret part that must stay).
const SECRET_SHAPES: &[(&str, &str, &str)] = &[
    (
        "sshpass -p Hunter2pw ssh root@host uptime",
        "Hunter2pw",
        "sshpass",
    ),
    ("sshpass -pHunter2pw ssh host", "Hunter2pw", "ssh host"),
    (
        "sshpass -e -p 'quoted pw' ssh host",
        "quoted pw",
        "ssh host",
    ),
    ("mysql -u root -pS3cretDb db1", "S3cretDb", "db1"),
    ("mysqldump -uroot -p'S3cret Db' shop", "S3cret Db", "shop"),
    ("mariadb -pMaria99pw -e status", "Maria99pw", "mariadb"),
    ("mysql --password=S3cretEq db1", "S3cretEq", "db1"),
    (
        "mysqladmin --password S3cretSp status",
        "S3cretSp",
        "status",
    ),
    ("curl -u alice:CurlPass1 https://x.io", "CurlPass1", "alice"),
    (
        "curl -ualice:CurlPass2 https://x.io",
        "CurlPass2",
        "https://x.io",
    ),
    (
        "curl --user 'bob:Curl Pass3' https://x.io",
        "Curl Pass3",
        "bob",
    ),
    ("curl --user=bob:CurlPass4 https://x.io", "CurlPass4", "bob"),
    (
        "curl --proxy-user p:ProxyPw5 https://x.io",
        "ProxyPw5",
        "https://x.io",
    ),
    ("gh api --token ghToken77 /user", "ghToken77", "/user"),
    ("deploy --token=TokEq88 --env prod", "TokEq88", "--env prod"),
    ("tool --api-key Ak_12345 run", "Ak_12345", "run"),
    ("tool --api-key=AkEq_678 run", "AkEq_678", "run"),
    ("app --password Pw_Flag9 start", "Pw_Flag9", "start"),
    (
        "az login --client-secret Cs_0001 -t t",
        "Cs_0001",
        "az login",
    ),
    ("tool --client-secret=CsEq_02 x", "CsEq_02", "tool"),
    (
        "curl -H 'Authorization: Token AuthTok3' https://x.io",
        "AuthTok3",
        "https://x.io",
    ),
    (
        "curl -H \"Authorization: Bearer BearTok44\" x.io",
        "BearTok44",
        "x.io",
    ),
    (
        "curl -H 'Authorization: Basic dXNlcjpwYXNz' x.io",
        "dXNlcjpwYXNz",
        "x.io",
    ),
    ("curl -H 'X-Api-Key: HdrKey55' x.io", "HdrKey55", "x.io"),
    (
        "curl -H 'PRIVATE-TOKEN: GlTok66' gitlab.io",
        "GlTok66",
        "gitlab.io",
    ),
    ("curl -H 'Cookie: sid=Ck77' x.io", "Ck77", "x.io"),
    ("curl -b 'id=CkB88' x.io", "CkB88", "x.io"),
    (
        "git clone https://u:UrlPw99@github.com/o/r",
        "UrlPw99",
        "github.com/o/r",
    ),
    (
        "psql postgresql://pg:PgUrl1@db:5432/app",
        "PgUrl1",
        "db:5432/app",
    ),
    ("curl https://u:p@ss@w0rd@x.io/a", "ss@w0rd", "x.io/a"),
    (
        "git -c http.extraHeader='Authorization: Basic ExtraHdr1' fetch",
        "ExtraHdr1",
        "fetch",
    ),
    (
        "git -c http.https://h.io/.extraheader=\"AUTHORIZATION: bearer Xh2\" pull",
        "Xh2",
        "pull",
    ),
    ("git -c http.extraheader=Xh3Raw push", "Xh3Raw", "git"),
    ("sudo PGPASSWORD=PgEnv4 psql -h db", "PgEnv4", "psql -h db"),
    ("env -i MYSQL_PWD=MyEnv5 mysql db", "MyEnv5", "mysql db"),
    ("ssh h SSHPASS=SpEnv6 sshpass -e ssh g", "SpEnv6", "ssh g"),
    (
        "wget --http-password=WgPw7 https://x.io/f",
        "WgPw7",
        "https://x.io/f",
    ),
    (
        "wget --http-user=u --http-password WgPw8 x",
        "WgPw8",
        "--http-user=u",
    ),
    ("wget --ftp-password=FtPw9 ftp://x/f", "FtPw9", "ftp://x/f"),
    ("docker login -u me -p DockPw1 reg.io", "DockPw1", "reg.io"),
    ("podman login -pDockPw2 reg.io", "DockPw2", "reg.io"),
    (
        "docker login --password DockPw3 reg.io",
        "DockPw3",
        "reg.io",
    ),
    (
        "echo DockPw4 | docker login --password-stdin reg.io",
        "DockPw4",
        "docker login",
    ),
    ("echo SudoPw5 | sudo -S apt update", "SudoPw5", "apt update"),
    ("redis-cli -a RedisPw6 ping", "RedisPw6", "ping"),
    (
        "ldapsearch -x -D cn=admin -w LdapPw7 -b dc=x",
        "LdapPw7",
        "dc=x",
    ),
    ("smbclient //h/s -U user%SmbPw8", "SmbPw8", "user"),
    (
        "openssl enc -aes256 -pass pass:OsslPw9 -in f",
        "OsslPw9",
        "-in f",
    ),
    ("openssl enc -aes256 -k OsslK10 -in f", "OsslK10", "-in f"),
    (
        "keytool -list -storepass StorePw11 -keystore k",
        "StorePw11",
        "keytool -list",
    ),
    ("gpg --passphrase GpgPw12 -d f.gpg", "GpgPw12", "f.gpg"),
    ("restic --pass RsPw13 backup", "RsPw13", "backup"),
    (
        "aws configure set aws_secret_access_key AwsSk14",
        "AwsSk14",
        "aws configure",
    ),
    (
        "curl -d '{\"password\": \"JsonPw15\"}' x.io",
        "JsonPw15",
        "x.io",
    ),
    (
        "curl 'https://x.io/?access_token=QTok16&a=1'",
        "QTok16",
        "&a=1",
    ),
    ("ssh h 'export API_TOKEN=Inner17; run'", "Inner17", "ssh h"),
    ("sqlcmd -S db -U sa -P SqlPw18", "SqlPw18", "-S db"),
    (
        "ipmitool -H bmc -U admin -P IpmiPw19 power status",
        "IpmiPw19",
        "power status",
    ),
    ("curl --oauth2-bearer OaTok20 x.io", "OaTok20", "x.io"),
    (
        "npm config set //r.io/:_authToken=NpmTok21",
        "NpmTok21",
        "npm config",
    ),
    (
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1.eyJzdWIiOiIx.sigSIG' x",
        "sigSIG",
        "curl",
    ),
    (
        "git push https://x-access-token:ghs_ABCDEFGHIJKLMNOPQRSTUVWX@github.com/o/r",
        "ABCDEFGHIJKLMNOPQRSTUVWX",
        "git push",
    ),
];

/// Issue 10, item 5: every shape is redacted on the write path, and the command keeps its
/// non-secret parts (so redaction did not simply drop the record).
#[test]
fn no_secret_shape_reaches_the_audit_log() {
    assert!(SECRET_SHAPES.len() >= 40, "{}", SECRET_SHAPES.len());
    let mut leaks = Vec::new();
    for (command, secret, kept) in SECRET_SHAPES {
        let text = logged(command);
        if text.contains(secret) || !text.contains(REDACTED) || !text.contains(kept) {
            leaks.push(format!("{command:?} -> {text}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "{} shapes:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}

/// Leading assignments lose their values altogether (item 6), secret-named or not.
#[test]
fn leading_secret_assignments_keep_only_their_names() {
    for (command, secret, name) in [
        ("PGPASSWORD=PgEnv4 psql -h db", "PgEnv4", "PGPASSWORD"),
        ("MYSQL_PWD=MyEnv5 mysql db", "MyEnv5", "MYSQL_PWD"),
        ("SSHPASS=SpEnv6 sshpass -e ssh h", "SpEnv6", "SSHPASS"),
        (
            "env GITHUB_TOKEN=GhEnv7 gh pr list",
            "GhEnv7",
            "GITHUB_TOKEN",
        ),
    ] {
        let text = logged(command);
        assert!(!text.contains(secret), "{command:?} -> {text}");
        assert!(
            text.contains(&format!("\"env\":[\"{name}\"]")),
            "{command:?} -> {text}"
        );
    }
}

/// Issue 10, item 6: a here-document body, inline programs and assignment values are content,
/// not metadata; the executables, targets and assignment names stay.
#[test]
fn bodies_programs_and_assignment_values_never_reach_the_audit_log() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "cat > notes.txt <<'EOF'\nHEREDOC_BODY_MARKER line\nEOF",
            &["HEREDOC_BODY_MARKER"],
            &["cat", "notes.txt", "here-document"],
        ),
        (
            "tee -a log <<-END\n\tHEREDOC_TAB_MARKER\n\tEND\nls",
            &["HEREDOC_TAB_MARKER"],
            &["tee -a log", "ls"],
        ),
        (
            "python3 -c 'print(\"INLINE_PY_MARKER\")' > out.txt",
            &["INLINE_PY_MARKER"],
            &["python3 -c", "out.txt", "program"],
        ),
        (
            "bash -c 'echo INLINE_SH_MARKER' && make",
            &["INLINE_SH_MARKER"],
            &["bash -c", "make"],
        ),
        (
            "sudo -u app sh -ec \"INLINE_SUDO_MARKER\"",
            &["INLINE_SUDO_MARKER"],
            &["sudo -u app sh -ec"],
        ),
        (
            "awk '/AWK_PROGRAM_MARKER/ {print}' data.csv",
            &["AWK_PROGRAM_MARKER"],
            &["awk", "data.csv"],
        ),
        (
            "perl -i -pe 's/PERL_MARKER/x/' f.txt",
            &["PERL_MARKER"],
            &["perl -i -pe", "f.txt"],
        ),
        (
            "node -e 'NODE_MARKER()'; cat <<< 'HERESTRING_MARKER'",
            &["NODE_MARKER", "HERESTRING_MARKER"],
            &["node -e", "cat <<<"],
        ),
        (
            "FOO=ASSIGN_VALUE_MARKER BAR=x make test",
            &["ASSIGN_VALUE_MARKER", "=x"],
            &["make test", "FOO", "BAR"],
        ),
        (
            "cd src && export PATH_EXTRA=EXPORT_VALUE_MARKER; env MODE=ENV_VALUE_MARKER ./run",
            &["EXPORT_VALUE_MARKER", "ENV_VALUE_MARKER"],
            &["cd src", "export PATH_EXTRA=", "./run", "MODE"],
        ),
        (
            "ls # COMMENT_MARKER",
            &["COMMENT_MARKER"],
            &["\"target\":\"ls\""],
        ),
    ];
    for (command, absent, present) in cases {
        let text = logged(command);
        for a in *absent {
            assert!(!text.contains(a), "{command:?} logged {a:?}: {text}");
        }
        for p in *present {
            assert!(text.contains(p), "{command:?} lost {p:?}: {text}");
        }
    }
}
