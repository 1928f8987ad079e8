package dev.seqd.fence;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A test-only Redis connection: RESP2 over one socket, enough to run the fence's script ({@link
 * RedisFence.ScriptRunner}) and a few plain commands. Not thread-safe: one per thread.
 */
final class Resp implements RedisFence.ScriptRunner, AutoCloseable {
    /** An error reply. */
    static final class RedisError extends IOException {
        private static final long serialVersionUID = 1L;

        RedisError(String message) {
            super(message);
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    Resp(String host, int port, int db) throws IOException {
        socket = new Socket(host, port);
        socket.setSoTimeout(30_000);
        in = new BufferedInputStream(socket.getInputStream());
        out = socket.getOutputStream();
        if (db != 0) {
            command("SELECT", Integer.toString(db));
        }
    }

    @Override
    public Object eval(String script, List<String> keys, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add("EVAL");
        cmd.add(script);
        cmd.add(Integer.toString(keys.size()));
        cmd.addAll(keys);
        cmd.addAll(args);
        return command(cmd.toArray(String[]::new));
    }

    synchronized Object command(String... args) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        for (String a : args) {
            byte[] raw = a.getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + raw.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            b.writeBytes(raw);
            b.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
        }
        out.write(b.toByteArray());
        out.flush();
        return read();
    }

    private Object read() throws IOException {
        int type = in.read();
        String line = line();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new RedisError(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                byte[] data = in.readNBytes(n + 2);
                return new String(data, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add(read());
                }
                return items;
            }
            default:
                throw new IOException("redis: unexpected reply type " + type);
        }
    }

    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("redis: connection closed");
            }
            b.write(c);
        }
        in.read(); // '\n'
        return b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
