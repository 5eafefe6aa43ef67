// bench-tomlpp - parse throughput of toml++ (header-only), the baseline for
// bench-toml.  Same protocol (process CPU time) and output format as
// bench-toml.c:
//	toml++: SIZE bytes, REPS runs, best X MB/s, median Y MB/s, N values
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <time.h>

#include <toml++/toml.h>

static double cpu_now()
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t count_node(const toml::node &n);

static size_t count_table(const toml::table &t)
{
	size_t c = 0;
	for (auto &&[k, v] : t)
		c += count_node(v);
	return c;
}

static size_t count_node(const toml::node &n)
{
	size_t c = 1;
	if (auto t = n.as_table())
		c += count_table(*t);
	else if (auto a = n.as_array())
		for (auto &&e : *a)
			c += count_node(e);
	return c;
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? std::atoi(argv[2]) : 10;
	if (argc < 2 || reps < 1 || reps > 10000) {
		std::fprintf(stderr, "usage: bench-tomlpp FILE [REPS]\n");
		return 2;
	}
	std::ifstream f(argv[1], std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	const std::string buf = ss.str();
	size_t values;
	try {
		toml::table t = toml::parse(std::string_view(buf), std::string_view(argv[1]));
		values = count_table(t);
	} catch (const toml::parse_error &e) {
		std::fprintf(stderr, "bench-tomlpp: error: %s\n", e.what());
		return 1;
	}
	std::vector<double> times;
	for (int i = 0; i < reps; i++) {
		double t0 = cpu_now();
		{
			toml::table t = toml::parse(std::string_view(buf), std::string_view(argv[1]));
		}
		times.push_back(cpu_now() - t0);
	}
	std::sort(times.begin(), times.end());
	double mb = (double)buf.size() / (1024.0 * 1024.0);
	std::printf("toml++: %zu bytes, %d runs, best %.1f MB/s, median %.1f MB/s, %zu values\n",
		    buf.size(), reps, mb / times[0], mb / times[reps / 2], values);
	return 0;
}
