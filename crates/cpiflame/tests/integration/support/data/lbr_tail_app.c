/* The program of lbr.rs's tail-call and PLT cases (see README.md): `tail_caller` ends in a
 * jump to `tail_target` (a tail call at -O2), `leaf_work` is an ordinary leaf, and
 * `lib_work` is called through the PLT stub `lib_work@plt`. */
int lib_work(int n);

__attribute__((noinline)) int tail_target(int n)
{
	int s = 1;
	for (int i = 0; i < n; i++)
		s = s * 3 + i;
	return s;
}

__attribute__((noinline)) int tail_caller(int n)
{
	return tail_target(n + 1);
}

__attribute__((noinline)) int leaf_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s ^= i << 1;
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	return tail_caller(argc) + leaf_work(argc) + lib_work(argc);
}
