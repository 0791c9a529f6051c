// The Java Kafka client's own reading of sasl.jaas.config values (tests/integration/test_jaas_oracle.py):
// one base64 value per stdin line; per line OK<TAB>module<TAB>flag<TAB>name:value... (base64) or ERR.
import java.io.*;
import java.util.*;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.config.SaslConfigs;

public class JaasOracle {
  public static void main(String[] a) throws Exception {
    BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    String line;
    while ((line = r.readLine()) != null) {
      String value = new String(Base64.getDecoder().decode(line), "UTF-8");
      Map<String, Object> cfg = new HashMap<>();
      cfg.put(SaslConfigs.SASL_JAAS_CONFIG, new Password(value));
      try {
        JaasContext ctx = JaasContext.loadClientContext(cfg);
        AppConfigurationEntry e = ctx.configurationEntries().get(0);
        StringBuilder sb = new StringBuilder("OK\t" + b64(e.getLoginModuleName()) + "\t" + e.getControlFlag());
        for (Map.Entry<String, ?> o : e.getOptions().entrySet())
          if (o.getKey() != null)  // a number where a name goes: kept under null, unreachable
            sb.append("\t").append(b64(o.getKey())).append(":").append(b64(String.valueOf(o.getValue())));
        System.out.println(sb);
      } catch (Exception ex) { System.out.println("ERR"); }
    }
  }
  static String b64(String s) throws Exception { return Base64.getEncoder().encodeToString(s.getBytes("UTF-8")); }
}
