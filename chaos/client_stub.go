package chaos

const clientEnv = "SEQD_CHAOS_CLIENT"

func clientMain(string) int { return 0 }
