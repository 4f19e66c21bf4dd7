/* The shared library of lbr.rs's PLT case (see README.md). */
int lib_work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i;
	return s;
}
