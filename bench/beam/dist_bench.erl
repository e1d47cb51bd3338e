%% The BEAM side of scripts/bench-dist: the same sink and pong as bench/dist's
%% `dist_bench serve`, and the same driver as `dist_bench run`, for BEAM<->BEAM and
%% beamlet<->BEAM pairs.
%%
%%   erl -pa DIR -noshell -name N -setcookie C -s dist_bench serve
%%   erl -pa DIR -noshell -name N -setcookie C -s dist_bench run Peer Messages Sizes RoundTrips
%%   erl -pa DIR -noshell -name N -setcookie C -s dist_bench big Peer Rounds
-module(dist_bench).
-export([serve/0, run/1, big/1]).

serve() ->
    Pong = spawn(fun pong/0),
    register(pong, Pong),
    register(sink, spawn(fun() -> sink(0, Pong) end)),
    io:format("ready ~s~n", [node()]),
    %% Runs until stdin closes.
    _ = io:get_line(""),
    wait_eof().

wait_eof() ->
    case io:get_line("") of
        eof -> halt();
        _ -> wait_eof()
    end.

pong() ->
    receive
        {From, X} -> From ! X
    end,
    pong().

sink(N, Pong) ->
    receive
        {done, From} when is_pid(From) ->
            From ! {count, N, self(), Pong},
            sink(0, Pong);
        _ ->
            sink(N + 1, Pong)
    end.

run([PeerA, MessagesA, SizesA, RoundTripsA]) ->
    Peer = list_to_atom(atom_to_list(PeerA)),
    Messages = list_to_integer(atom_to_list(MessagesA)),
    Sizes = [list_to_integer(S) || S <- string:tokens(atom_to_list(SizesA), ",")],
    RoundTrips = list_to_integer(atom_to_list(RoundTripsA)),
    {Sink, Pong} = discover(Peer, 100),
    drain_counts(),
    [oneway(Sink, Messages, Size) || Size <- Sizes],
    rtt(Pong, RoundTrips),
    halt().

discover(Peer, 0) ->
    io:format(standard_error, "dist_bench: the sink on ~s does not answer~n", [Peer]),
    halt(1);
discover(Peer, N) ->
    {sink, Peer} ! {done, self()},
    receive
        {count, _, Sink, Pong} -> {Sink, Pong}
    after 300 -> discover(Peer, N - 1)
    end.

%% Discovery asks again every 300 ms until the connection is up, and every ask is answered:
%% left queued, a late answer would be taken for the first size's count (and shift the rest).
drain_counts() ->
    receive
        {count, _, _, _} -> drain_counts()
    after 500 -> ok
    end.

oneway(Sink, Messages, Size) ->
    Msg = {m, binary:copy(<<"x">>, Size)},
    T0 = erlang:monotonic_time(microsecond),
    send_n(Sink, Msg, Messages),
    Sink ! {done, self()},
    Got = receive {count, C, _, _} -> C after 120000 -> -1 end,
    Secs = (erlang:monotonic_time(microsecond) - T0) / 1.0e6,
    io:format("{\"kind\":\"oneway\",\"size\":~b,\"messages\":~b,\"received\":~b,"
              "\"seconds\":~.6f,\"per_second\":~b}~n",
              [Size, Messages, Got, Secs, round(Got / Secs)]).

send_n(_, _, 0) -> ok;
send_n(To, Msg, N) -> To ! Msg, send_n(To, Msg, N - 1).

rtt(Pong, K) ->
    Times = lists:sort([trip(Pong) || _ <- lists:seq(1, K)]),
    P50 = lists:nth(K div 2 + 1, Times),
    P99 = lists:nth(K * 99 div 100 + 1, Times),
    io:format("{\"kind\":\"rtt\",\"round_trips\":~b,\"p50_us\":~.1f,\"p99_us\":~.1f}~n",
              [K, P50 / 1.0, P99 / 1.0]).

trip(Pong) ->
    T0 = erlang:monotonic_time(nanosecond),
    Pong ! {self(), ping},
    receive ping -> ok end,
    (erlang:monotonic_time(nanosecond) - T0) / 1000.

%% A 64 MiB message {m, Binary} to the sink, Rounds times, each timed until the sink's count
%% comes back, while another process makes round trips through pong (as `dist_bench big`).
big([PeerA, RoundsA]) ->
    Peer = list_to_atom(atom_to_list(PeerA)),
    Rounds = list_to_integer(atom_to_list(RoundsA)),
    {Sink, Pong} = discover(Peer, 100),
    drain_counts(),
    Size = 64 * 1024 * 1024,
    Msg = {m, binary:copy(<<"x">>, Size)},
    {Transfers, TripLists} = lists:unzip([big_round(Sink, Pong, Msg) || _ <- lists:seq(1, Rounds)]),
    Trips = lists:sort(lists:append(TripLists)),
    K = length(Trips),
    At = fun(_) when K =:= 0 -> -1.0; (I) -> lists:nth(I + 1, Trips) / 1.0 end,
    io:format("{\"kind\":\"big\",\"size\":~b,\"fragment_size\":65536,\"rounds\":~b,"
              "\"transfer_ms\":~.1f,\"trips\":~b,\"p50_us\":~.1f,\"p99_us\":~.1f}~n",
              [Size, Rounds, lists:nth(Rounds div 2 + 1, lists:sort(Transfers)), K,
               At(K div 2), At(K * 99 div 100)]),
    halt().

big_round(Sink, Pong, Msg) ->
    Self = self(),
    Pinger = spawn(fun() -> pinger(Pong, Self, []) end),
    T0 = erlang:monotonic_time(microsecond),
    Sink ! Msg,
    Sink ! {done, self()},
    receive {count, _, _, _} -> ok end,
    T1 = erlang:monotonic_time(microsecond),
    Pinger ! stop,
    receive {trips, L} -> {(T1 - T0) / 1000, L} end.

pinger(Pong, Driver, Acc) ->
    receive
        stop -> Driver ! {trips, Acc}
    after 0 -> pinger(Pong, Driver, [trip(Pong) | Acc])
    end.
