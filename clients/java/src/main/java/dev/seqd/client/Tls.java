package dev.seqd.client;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** An SSLContext from PEM files, with the JDK alone. */
final class Tls {
    private Tls() {}

    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z ]+)-----([A-Za-z0-9+/=\\s]+)-----END \\1-----");
    private static final char[] PASSWORD = "in-memory".toCharArray();

    /**
     * Trusts caCert (or the JDK's default trust store when null) and presents the client
     * certificate cert with its PKCS#8 key (EC or RSA) when both are given.
     */
    static SSLContext context(Path caCert, Path cert, Path key) {
        if ((cert == null) != (key == null)) {
            throw new IllegalArgumentException(
                    "a client certificate needs both SEQD_CERT and SEQD_KEY (cert and key), got only "
                            + (cert == null ? "the key" : "the certificate"));
        }
        try {
            TrustManagerFactory tmf = null;
            if (caCert != null) {
                KeyStore trust = emptyStore();
                int i = 0;
                for (Certificate c : certificates(caCert, "SEQD_CACERT")) {
                    trust.setCertificateEntry("ca" + i++, c);
                }
                tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trust);
            }
            KeyManagerFactory kmf = null;
            if (cert != null) {
                KeyStore ks = emptyStore();
                Certificate[] chain = certificates(cert, "SEQD_CERT").toArray(new Certificate[0]);
                ks.setKeyEntry("client", privateKey(key), PASSWORD, chain);
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(ks, PASSWORD);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf == null ? null : kmf.getKeyManagers(),
                    tmf == null ? null : tmf.getTrustManagers(), null);
            return ctx;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("TLS settings: " + e.getMessage(), e);
        }
    }

    private static KeyStore emptyStore() throws GeneralSecurityException, IOException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        return ks;
    }

    private static Collection<? extends Certificate> certificates(Path file, String what)
            throws GeneralSecurityException, IOException {
        byte[] pem = read(file, what);
        Collection<? extends Certificate> certs =
                CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem));
        if (certs.isEmpty()) {
            throw new IllegalArgumentException(what + " " + file + " holds no PEM certificate");
        }
        return certs;
    }

    /** A PEM "PRIVATE KEY" (PKCS#8), EC or RSA. */
    static PrivateKey privateKey(Path file) throws GeneralSecurityException, IOException {
        String text = new String(read(file, "SEQD_KEY"), StandardCharsets.US_ASCII);
        Matcher m = PEM.matcher(text);
        while (m.find()) {
            String type = m.group(1);
            if (type.equals("EC PRIVATE KEY") || type.equals("RSA PRIVATE KEY")) {
                throw new IllegalArgumentException("SEQD_KEY " + file + " is a " + type
                        + "; convert it to PKCS#8 with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.p8");
            }
            if (!type.equals("PRIVATE KEY")) {
                continue;
            }
            byte[] der = Base64.getMimeDecoder().decode(m.group(2));
            PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
            GeneralSecurityException first = null;
            for (String alg : new String[] {"EC", "RSA"}) {
                try {
                    return KeyFactory.getInstance(alg).generatePrivate(spec);
                } catch (GeneralSecurityException e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
            throw new IllegalArgumentException("SEQD_KEY " + file + ": neither an EC nor an RSA PKCS#8 key", first);
        }
        throw new IllegalArgumentException("SEQD_KEY " + file + " holds no PEM \"PRIVATE KEY\" block");
    }

    private static byte[] read(Path file, String what) {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new IllegalArgumentException(what + ": cannot read " + file + ": " + e.getMessage(), e);
        }
    }
}
