// The Postgres JDBC driver (what DBeaver and Metabase connect with) against `pondra serve`:
// the catalog metadata those tools browse, and a prepared statement with a parameter.
// Usage: java -cp postgresql.jar:. JdbcClient PORT; prints "ok" or fails.

import java.sql.*;
import java.util.*;

public class JdbcClient {
    static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError(what);
    }

    static List<String> column(ResultSet rs, String name) throws SQLException {
        List<String> values = new ArrayList<>();
        while (rs.next()) values.add(rs.getString(name));
        rs.close();
        return values;
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/lake";
        try (Connection c = DriverManager.getConnection(url, "analyst", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE t (id INT NOT NULL, name TEXT, price DECIMAL(10,2))");
                s.execute("INSERT INTO t VALUES (1, 'a', 2.50), (2, 'b', NULL)");
                s.execute("CREATE VIEW v AS SELECT id FROM t");
            }
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseProductVersion().startsWith("14"), md.getDatabaseProductVersion());
            List<String> schemas = column(md.getSchemas(), "TABLE_SCHEM");
            check(schemas.contains("public"), "schemas " + schemas);
            List<String> tables = column(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME");
            check(tables.equals(List.of("t")), "tables " + tables);
            List<String> views = column(md.getTables(null, "public", "%", new String[] {"VIEW"}), "TABLE_NAME");
            check(views.equals(List.of("v")), "views " + views);
            ResultSet columns = md.getColumns(null, "public", "t", "%");
            List<String> described = new ArrayList<>();
            while (columns.next()) {
                described.add(columns.getString("COLUMN_NAME") + " " + columns.getString("TYPE_NAME")
                        + " " + columns.getInt("DATA_TYPE") + " " + columns.getString("IS_NULLABLE"));
            }
            List<String> expected = List.of(
                    "id int4 " + Types.INTEGER + " NO",
                    "name varchar " + Types.VARCHAR + " YES",
                    "price numeric " + Types.NUMERIC + " YES");
            check(described.equals(expected), "columns " + described);
            try (PreparedStatement ps = c.prepareStatement("SELECT id, name, price FROM t WHERE id > ? ORDER BY id")) {
                ps.setInt(1, 0);
                try (ResultSet rs = ps.executeQuery()) {
                    check(rs.next() && rs.getInt(1) == 1 && rs.getString(2).equals("a")
                            && rs.getBigDecimal(3).compareTo(new java.math.BigDecimal("2.50")) == 0, "first row");
                    check(rs.next() && rs.getInt(1) == 2 && rs.getBigDecimal(3) == null, "second row");
                    check(!rs.next(), "two rows");
                }
            }
        }
        System.out.println("ok");
    }
}
